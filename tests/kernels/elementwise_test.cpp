// Elementwise kernels on every backend vs cpu/ref (double): activations (the vector exp, tanh and
// erf approximations are checked over a wide sweep), glu, add (incl. row broadcast), scale,
// softmax. Tolerances: an f32 activation may differ from the double reference by a few ulp of
// the result plus a few ulp of its input scale: |err| <= 16 eps |want| + 8 eps |x|.
#include <cstring>

#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

namespace {

const char* act_name(Activation a) {
  switch (a) {
    case Activation::GeluErf: return "gelu_erf";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Silu: return "silu";
    case Activation::Tanh: return "tanh";
    case Activation::Relu: return "relu";
  }
  return "?";
}

// Inputs: a dense sweep over [-12, 12] plus tiny and large magnitudes, in an odd-sized tensor.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -12000; i <= 12000; i += 7) x.push_back(i / 1000.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -3e-5f, 30.0f, -30.0f, 88.0f, -88.0f, 200.0f, -200.0f}) x.push_back(v);
  return x;
}

void check_activation(Activation act, bool glu) {
  std::vector<float> x = sweep();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> up = random_floats(9, x.size(), -2, 2);
  std::vector<float> want(x.size());
  std::vector<double> tol(x.size());
  for (int64_t i = 0; i < n; i++) {
    const double r = cpu::ref::activate(act, x[i]);
    want[i] = static_cast<float>(glu ? r * up[i] : r);
    tol[i] = 16 * kF32Eps * std::fabs(want[i]) + 8 * kF32Eps * std::fabs(x[i]) * (glu ? std::fabs(up[i]) : 1.0) + 1e-37;
  }
  for (auto& bt : backends_under_test()) {
    DeviceArena arena(*bt.backend);
    Tensor tx = arena.upload(host_tensor(x, 1, n));
    Tensor ty = arena.poisoned(DType::F32, 1, n);
    if (glu) {
      GluArgs a;
      a.gate = tx;
      a.up = arena.upload(host_tensor(up, 1, n));
      a.y = ty;
      a.act = act;
      bt.backend->glu(a);
    } else {
      ActivationArgs a;
      a.x = tx;
      a.y = ty;
      a.act = act;
      bt.backend->activation(a);
    }
    const std::vector<float> got = arena.download(ty);
    for (int64_t i = 0; i < n; i++)
      if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol[i]))
        FAIL(bt.name << (glu ? " glu " : " ") << act_name(act) << "(" << x[i] << ") got " << got[i] << " want " << want[i]);
  }
}

}  // namespace

TEST_CASE("activations match the reference over a wide sweep", "[kernels][activation]") {
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::Silu, Activation::Tanh, Activation::Relu}) {
    check_activation(a, false);
    check_activation(a, true);
  }
}

TEST_CASE("add, scale and softmax match the reference", "[kernels][elementwise]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {17, 384}, {5, 1001}}) {
    std::vector<float> a = random_floats(1, static_cast<size_t>(rows * cols), -3, 3);
    std::vector<float> b = random_floats(2, static_cast<size_t>(rows * cols), -3, 3);
    std::vector<float> brow = random_floats(3, static_cast<size_t>(cols), -3, 3);
    for (auto& bt : backends_under_test()) {
      DeviceArena arena(*bt.backend);
      for (bool bcast : {false, true}) {
        std::vector<float> want(a.size());
        AddArgs ra;
        ra.a = host_tensor(a, rows, cols);
        ra.b = bcast ? host_tensor(brow, 1, cols) : host_tensor(b, rows, cols);
        ra.y = host_tensor(want, rows, cols);
        cpu::ref::add(ra);
        AddArgs da = ra;
        da.a = arena.upload(ra.a);
        da.b = arena.upload(ra.b);
        da.y = arena.poisoned(DType::F32, rows, cols);
        bt.backend->add(da);
        expect_close(arena.download(da.y), want, 0, 0, bt.name + " add" + (bcast ? " broadcast" : ""), cols);  // exact
      }
      std::vector<float> ws(a.size());
      ScaleArgs rs;
      rs.x = host_tensor(a, rows, cols);
      rs.y = host_tensor(ws, rows, cols);
      rs.factor = 0.37f;
      cpu::ref::scale(rs);
      ScaleArgs ds = rs;
      ds.x = arena.upload(rs.x);
      ds.y = ds.x;  // in place
      bt.backend->scale(ds);
      expect_close(arena.download(ds.y), ws, 0, 0, bt.name + " scale", cols);  // one rounding: exact
      std::vector<float> wsm(a.size());
      SoftmaxArgs rm;
      rm.x = host_tensor(a, rows, cols);
      rm.y = host_tensor(wsm, rows, cols);
      cpu::ref::softmax(rm);
      SoftmaxArgs dm = rm;
      dm.x = arena.upload(rm.x);
      dm.y = arena.poisoned(DType::F32, rows, cols);
      bt.backend->softmax(dm);
      // exp error ~2 ulp each, the sum ~cols ulp: |err| <= (cols + 8) eps |want|.
      expect_close(arena.download(dm.y), wsm, 1e-30, (cols + 8) * kF32Eps, bt.name + " softmax", cols);
    }
  }
}

#if !defined(EMBED_TEST_DEVICE_CUDA) && !defined(EMBED_TEST_DEVICE_CUDA_EMULATED)  // CPU levels only
TEST_CASE("the 16-lane activations equal the 8-lane ones bit for bit", "[kernels][activation]") {
  // simd_avx512.h is a lane-wise port of simd_avx2.h (same operations, constants and order): every
  // CPU level's activation must give the AVX2 level's bits, so vectors do not depend on the level.
  std::vector<float> x = sweep();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<std::vector<float>> results;
  std::vector<std::string> names;
  for (Activation act : {Activation::GeluErf, Activation::GeluTanh, Activation::Silu, Activation::Tanh, Activation::Relu}) {
    results.clear();
    names.clear();
    for (auto& bt : backends_under_test()) {
      if (bt.name.rfind("cpu-", 0) != 0) continue;
      DeviceArena arena(*bt.backend);
      Tensor ty = arena.poisoned(DType::F32, 1, n);
      bt.backend->activation(ActivationArgs{arena.upload(host_tensor(x, 1, n)), ty, act});
      results.push_back(arena.download(ty));
      names.push_back(bt.name);
    }
    for (size_t b = 1; b < results.size(); b++) {
      INFO(act_name(act) << ": " << names[b] << " vs " << names[0]);
      CHECK(std::memcmp(results[b].data(), results[0].data(), results[0].size() * 4) == 0);
    }
  }
}
#endif

// layer_norm and rms_norm on every backend vs cpu/ref (double). Tolerance from the maths: the
// f32 mean and variance carry a relative error of about cols * eps; that propagates to
// y = xhat * w + b as |err| <= c * cols * eps * |w| * (|xhat| + 1) + eps |b|, with c = 4.
#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("layer_norm matches the reference", "[kernels][norm]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {5, 8}, {17, 384}, {4, 1023}, {2, 4096}}) {
    for (bool with_bias : {true, false}) {
      std::vector<float> x = random_floats(static_cast<uint32_t>(rows * cols), static_cast<size_t>(rows * cols), -3, 5);
      std::vector<float> w = random_floats(2, static_cast<size_t>(cols), 0.5f, 1.5f);
      std::vector<float> b = random_floats(3, static_cast<size_t>(cols));
      std::vector<float> want(x.size());
      LayerNormArgs ra;
      ra.x = host_tensor(x, rows, cols);
      ra.weight = host_tensor(w, 1, cols);
      if (with_bias) ra.bias = host_tensor(b, 1, cols);
      ra.y = host_tensor(want, rows, cols);
      ra.eps = 1e-12f;
      cpu::ref::layer_norm(ra);
      for (auto& bt : backends_under_test()) {
        DeviceArena arena(*bt.backend);
        LayerNormArgs a = ra;
        a.x = arena.upload(ra.x);
        a.weight = arena.upload(ra.weight);
        if (with_bias) a.bias = arena.upload(ra.bias);
        a.y = arena.poisoned(DType::F32, rows, cols);
        bt.backend->layer_norm(a);
        // |w| <= 1.5 and |xhat| <= sqrt(cols), so a per-element bound of 4 cols eps 1.5 (|y| + 1) holds.
        expect_close(arena.download(a.y), want, 4 * cols * kF32Eps * 1.5 * 2, 4 * cols * kF32Eps,
                     bt.name + " layer_norm " + std::to_string(rows) + "x" + std::to_string(cols), cols);
        // In place (y aliases x).
        a.x = arena.upload(ra.x);
        a.y = a.x;
        bt.backend->layer_norm(a);
        expect_close(arena.download(a.y), want, 4 * cols * kF32Eps * 1.5 * 2, 4 * cols * kF32Eps, bt.name + " layer_norm in place", cols);
      }
    }
  }
}

TEST_CASE("rms_norm matches the reference, including per-head rows", "[kernels][norm]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {40, 64}, {9, 128}, {3, 640}, {2, 1025}}) {
    std::vector<float> x = random_floats(static_cast<uint32_t>(rows + cols), static_cast<size_t>(rows * cols), -2, 2);
    std::vector<float> w = random_floats(5, static_cast<size_t>(cols), 0.0f, 2.0f);
    std::vector<float> want(x.size());
    RmsNormArgs ra;
    ra.x = host_tensor(x, rows, cols);
    ra.weight = host_tensor(w, 1, cols);
    ra.y = host_tensor(want, rows, cols);
    ra.eps = 1e-6f;
    cpu::ref::rms_norm(ra);
    for (auto& bt : backends_under_test()) {
      DeviceArena arena(*bt.backend);
      RmsNormArgs a = ra;
      a.x = arena.upload(ra.x);
      a.weight = arena.upload(ra.weight);
      a.y = arena.poisoned(DType::F32, rows, cols);
      bt.backend->rms_norm(a);
      // Sum of squares: relative error <= cols eps; y = x * inv * w: |err| <= (cols/2 + 3) eps |y|.
      expect_close(arena.download(a.y), want, 1e-30, (cols / 2.0 + 3) * kF32Eps, bt.name + " rms_norm", cols);
    }
  }
}

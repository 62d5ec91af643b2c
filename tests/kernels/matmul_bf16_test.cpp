// Compute type bf16 on AVX512-BF16 (cpu/matmul_bf16_avx512.cpp) against its scalar reference
// (cpu::ref::matmul_bf16_pairs): the kernel sums in the reference's order (per 256-deep k-block,
// pair by pair, odd element first, as vdpbf16ps adds), so the two give the same bits, tails in m,
// n and k, bias, accumulate and a fused GELU included. The reference's order is itself checked on
// hand-worked sums. Its distance to exact maths is bounded by tests/kernels/matmul_test.cpp (the
// cpu-avx512-bf16 backend of the harness). On a CPU without AVX512-BF16 the level's refusal is
// what is checked.
#include <cmath>
#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/kernels.h"
#include "cpu/ref/ref.h"
#include "tests/cpuinfo_flags.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::test;

namespace {

bool cpu_has_vdpbf16ps() { return cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_bf16"); }

// The avx512 level at compute type bf16, or nullptr after checking that this CPU refuses it.
std::unique_ptr<Backend> bf16_backend_or_refusal() {
  BackendOptions o;
  o.threads = 2;
  o.cpu_isa = CpuIsa::Avx512;
  o.compute_type = ComputeType::BF16;
  if (cpu_has_vdpbf16ps()) return cpu::create_cpu_backend(o);
  if (cpuinfo_supports(CpuIsa::Avx512))
    CHECK_THROWS_WITH(cpu::create_cpu_backend(o), Catch::Contains("AVX512-BF16's vdpbf16ps, which this CPU lacks"));
  else
    CHECK_THROWS_WITH(cpu::create_cpu_backend(o), Catch::Contains("cannot run here"));
  WARN("no AVX512-BF16 on this CPU (/proc/cpuinfo): the bf16 kernel was not run, its refusal was checked");
  return nullptr;
}

// y (1 x 1) = x (1 x k) . w (1 x k)^T by the reference and, where the CPU has it, by the kernel.
void check_hand_sum(std::vector<float> x, std::vector<float> w, float want, Backend* b) {
  const int64_t k = static_cast<int64_t>(x.size());
  std::vector<float> y = {0.0f};
  MatmulArgs a;
  a.x = host_tensor(x, 1, k);
  a.w = host_tensor(w, 1, k);
  a.y = host_tensor(y, 1, 1);
  cpu::ref::matmul_bf16_pairs(a, cpu::avx512::kBf16KBlock);
  CHECK(y[0] == want);
  if (!b) return;
  y[0] = NAN;
  a.w = b->load_weight(host_tensor(w, 1, k), WeightUse::Matmul);
  b->matmul(a);
  b->release_weight(a.w);
  CHECK(y[0] == want);
}

}  // namespace

TEST_CASE("bf16 pair sums: operands rounded to nearest even, each pair's odd product added first", "[kernels][matmul][bf16]") {
  std::unique_ptr<Backend> b = bf16_backend_or_refusal();
  // bf16 keeps 8 significant bits: 1 + 2^-8 is half way between 1 and 1 + 2^-7 and rounds to the
  // even 1; 1 + 3 * 2^-8 is half way between 1 + 2^-7 and 1 + 2^-6 and rounds to 1 + 2^-6.
  check_hand_sum({1.0f + 0x1p-8f}, {1.0f}, 1.0f, b.get());
  check_hand_sum({1.0f + 3 * 0x1p-8f}, {1.0f}, 1.0f + 0x1p-6f, b.get());
  check_hand_sum({1.0f + 3 * 0x1p-8f}, {-3.0f}, -3.0f - 3 * 0x1p-6f, b.get());
  // x = (1, 2^25, 1, -2^25), w = 1: in pair order (odd first) 2^25, + 1 -> 2^25 (an f32 ulp there
  // is 4), - 2^25 -> 0, + 1 -> 1; in plain k order the sum would be 0, exactly 2.
  check_hand_sum({1.0f, 0x1p25f, 1.0f, -0x1p25f}, {1.0f, 1.0f, 1.0f, 1.0f}, 1.0f, b.get());
  // Each 256-deep k-block sums from 0 and is added to y in order. k = 258, x = 1 at k = 0 and 256,
  // 2^25 at k = 1, -2^25 at k = 257, w = 1: block 0 gives 2^25 + 1 -> 2^25, block 1 gives
  // -2^25 + 1 -> -2^25, and y = 2^25 - 2^25 = 0; one block over all k would give 1 (as above).
  std::vector<float> x(258, 0.0f), w(258, 1.0f);
  x[0] = 1.0f;
  x[1] = 0x1p25f;
  x[256] = 1.0f;
  x[257] = -0x1p25f;
  check_hand_sum(x, w, 0.0f, b.get());
}

TEST_CASE("bf16 GEMM on vdpbf16ps gives its reference's bits", "[kernels][matmul][bf16]") {
  std::unique_ptr<Backend> b = bf16_backend_or_refusal();
  if (!b) return;
  struct Shape {
    int64_t m, n, k;
  };
  uint32_t seed = 700;
  for (DType wt : {DType::F32, DType::F16, DType::BF16})
    for (Shape s : {Shape{1, 1, 1}, Shape{5, 17, 7}, Shape{12, 32, 256}, Shape{13, 33, 257}, Shape{25, 70, 600},
                    Shape{61, 100, 513}, Shape{50, 48, 1024}}) {
      std::vector<float> x = random_floats(seed++, static_cast<size_t>(s.m * s.k), -2.0f, 2.0f);
      std::vector<uint8_t> w = random_rows(wt, s.n, s.k, seed++);
      std::vector<float> bias = random_floats(seed++, static_cast<size_t>(s.n));
      std::vector<float> y0 = random_floats(seed++, static_cast<size_t>(s.m * s.n));
      const Tensor tw{w.data(), wt, Device::Cpu, s.n, s.k};
      const Tensor packed = b->load_weight(tw, WeightUse::Matmul);
      for (int variant = 0; variant < 4; variant++) {  // none; bias; bias + accumulate; bias + GELU
        std::vector<float> want = y0, got(y0.size(), NAN);
        MatmulArgs a;
        a.x = host_tensor(x, s.m, s.k);
        a.w = tw;
        if (variant > 0) a.bias = host_tensor(bias, 1, s.n);
        a.accumulate = variant == 2;
        a.y = host_tensor(want, s.m, s.n);
        cpu::ref::matmul_bf16_pairs(a, cpu::avx512::kBf16KBlock);
        // The fused GELU is the level's activation op on the stored sums (matmul_test.cpp checks
        // that the two agree on every backend, and elementwise_test.cpp the op against ref::activate).
        if (variant == 3) b->activation(ActivationArgs{a.y, a.y, Activation::GeluErf});
        if (a.accumulate) got = y0;
        a.w = packed;
        a.y = host_tensor(got, s.m, s.n);
        if (variant == 3) a.activation = Activation::GeluErf;
        b->matmul(a);
        INFO(dtype_name(wt) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " variant " << variant);
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < got.size(); i++)
          if (!(got[i] == want[i]) && differ++ == 0) first = i;
        INFO(differ << " elements differ; first (" << first / s.n << ", " << first % s.n << "): got " << got[first] << " want "
                    << want[first]);
        CHECK(differ == 0);
      }
      b->release_weight(packed);
    }
}

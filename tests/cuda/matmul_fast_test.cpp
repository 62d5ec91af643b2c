// The tensor-core matmul of the CUDA backend (default mode) against cpu/ref, on a device (label
// cuda; skipped without one). Tolerance from the maths: activations are rounded to
// the weight's 16-bit type (relative error u_x: 2^-11 for f16, 2^-8 for bf16; f16 subnormals add
// at most 2^-25 * alpha absolute, alpha the overflow shift), quantized weights are decoded to f16
// (u_w = 2^-11 relative, or 2^-25 absolute where the result is an f16 subnormal; else exact),
// products of two 16-bit values are exact in f32 and the sum is an f32 accumulation:
// |err| <= (u_x + u_w + u_x u_w + (k + 2) eps) sum|x w| + 2^-25 alpha sum|w| + 2^-25 sum|x| [quantized]
// + 2 eps (|bias| + |y0|).
#include <catch2/catch.hpp>

#include "cpu/ref/ref.h"
#include "gguf/quants.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::test;

namespace {

void check_fast_matmul(Backend& b, DType wt, int64_t m, int64_t n, int64_t k, bool with_bias, bool accumulate, float big,
                       uint32_t seed) {
  std::vector<float> x = random_floats(seed, static_cast<size_t>(m * k));
  if (big != 0) x[static_cast<size_t>(m * k / 2)] = big;  // forces the f16 overflow shift
  std::vector<uint8_t> w = random_rows(wt, n, k, seed + 1);
  std::vector<float> bias = random_floats(seed + 2, static_cast<size_t>(n)), y0 = random_floats(seed + 3, static_cast<size_t>(m * n));
  const Tensor tw{w.data(), wt, Device::Cpu, n, k};
  std::vector<float> want = y0;
  MatmulArgs ra;
  ra.x = host_tensor(x, m, k);
  ra.w = tw;
  if (with_bias) ra.bias = host_tensor(bias, 1, n);
  ra.y = host_tensor(want, m, n);
  ra.accumulate = accumulate;
  cpu::ref::matmul(ra);

  DeviceArena arena(b);
  MatmulArgs a;
  a.x = arena.upload(ra.x);
  a.w = b.load_weight(tw, WeightUse::Matmul);
  if (with_bias) a.bias = arena.upload(ra.bias);
  a.y = accumulate ? arena.upload(host_tensor(y0, m, n)) : arena.poisoned(DType::F32, m, n);
  a.accumulate = accumulate;
  b.matmul(a);
  const std::vector<float> got = arena.download(a.y);
  const bool bf16 = a.w.dtype == DType::BF16;
  b.release_weight(a.w);

  double max_abs_x = 0;
  for (float v : x) max_abs_x = std::max(max_abs_x, std::fabs(static_cast<double>(v)));
  const double alpha = max_abs_x > 65504 ? std::ldexp(1.0, std::ilogb(max_abs_x) + 1 - 15) : 1.0;
  const double u_x = bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const double u_w = dtype_is_quantized(wt) ? std::ldexp(1.0, -11) : 0.0;
  const double sub = bf16 ? 0.0 : std::ldexp(alpha, -25);
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t j = 0; j < n; j++) {
    gguf::dequantize_row(dtype_to_gguf(wt), w.data() + j * tw.row_bytes(), wrow.data(), k);
    double sum_w = 0;
    for (float v : wrow) sum_w += std::fabs(v);
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      double sum_x = 0;
      for (int64_t p = 0; p < k; p++) {
        s += std::fabs(static_cast<double>(x[i * k + p]) * wrow[p]);
        sum_x += std::fabs(x[i * k + p]);
      }
      const double extra = (with_bias ? std::fabs(bias[j]) : 0) + (accumulate ? std::fabs(y0[i * n + j]) : 0);
      const double weight_sub = u_w > 0 ? std::ldexp(1.0, -25) * sum_x : 0.0;
      const double tol = (u_x + u_w + u_x * u_w + (k + 2) * kF32Eps) * s + sub * sum_w + weight_sub + 2 * kF32Eps * extra;
      const double err = std::fabs(static_cast<double>(got[i * n + j]) - want[i * n + j]);
      if (!(err <= tol))
        FAIL("cuda tensor-core matmul " << dtype_name(wt) << " m=" << m << " n=" << n << " k=" << k << " big=" << big
                                        << ": element (" << i << ", " << j << ") got " << got[i * n + j] << " want "
                                        << want[i * n + j] << " tol " << tol);
    }
  }
}

}  // namespace

TEST_CASE("tensor-core matmuls match the reference within the 16-bit rounding bound", "[cuda][matmul]") {
  auto b = tensor_core_backend();
  if (!b) return;
  uint32_t seed = 700;
  for (DType wt : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    const bool k_quant = dtype_block_elems(wt) == 256;
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 256}, {7, 33, 512}, {64, 70, 768}, {512, 384, 1536},
                           {300, 1000, 256}}) {
      if (!k_quant && k % 32) continue;
      check_fast_matmul(*b, wt, m, n, k, (m + n) % 2 == 0, m == 7 || m == 300, 0.0f, seed++);
    }
  }
  for (int64_t k : {1, 3, 17, 257})  // k not a multiple of 8: cuBLAS picks unaligned kernels
    for (DType wt : {DType::F16, DType::BF16}) check_fast_matmul(*b, wt, 9, 19, k, true, true, 0.0f, seed++);
}

TEST_CASE("an activation beyond the f16 range is shifted, not turned into inf", "[cuda][matmul]") {
  auto b = tensor_core_backend();
  if (!b) return;
  check_fast_matmul(*b, DType::F16, 16, 40, 256, true, false, 3.0e5f, 900);
  check_fast_matmul(*b, DType::Q8_0, 16, 40, 256, false, true, -2.0e6f, 901);
}

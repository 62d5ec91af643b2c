// CUDA kernels the shared kernel tests do not reach, run by the CPU emulator (their GPU runs are
// covered by tests/cuda/): weight decoding equals gguf's scalar decoders bit for bit (to f32) or
// their round-to-nearest-even (to f16/bf16), f16 overflow is flagged, the activation conversion
// picks the smallest power-of-two shift that keeps f16 finite, and the f32 matmul is right over
// several row tiles.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "cpu/ref/ref.h"
#include "cuda/kernels.cuh"
#include "gguf/fp16.h"
#include "gguf/quants.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::cuda;
using namespace embed::test;

namespace {

std::vector<float> reference_rows(DType t, const std::vector<uint8_t>& raw, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const size_t rb = dtype_row_bytes(t, cols);
  for (int64_t r = 0; r < rows; r++) gguf::dequantize_row(dtype_to_gguf(t), raw.data() + r * rb, out.data() + r * cols, cols);
  return out;
}

}  // namespace

TEST_CASE("load-time decoding equals the scalar decoders for every weight type", "[kernels][emulator][dequant]") {
  uint32_t seed = 50;
  for (DType t : kAllWeightTypes) {
    const int64_t cols = dtype_block_elems(t) == 256 ? 512 : 96, rows = 3;
    std::vector<uint8_t> raw = random_rows(t, rows, cols, seed++);
    const std::vector<float> want = reference_rows(t, raw, rows, cols);
    const Tensor raw_t{raw.data(), t, Device::Cuda, rows, cols};
    unsigned overflow = 7;
    std::vector<float> f32(want.size(), NAN);
    launch_decode_rows(raw_t, f32.data(), DType::F32, &overflow, nullptr);
    std::vector<uint16_t> f16(want.size(), 0xFFFF), bf16(want.size(), 0xFFFF);
    overflow = 0;
    launch_decode_rows(raw_t, f16.data(), DType::F16, &overflow, nullptr);
    CHECK(overflow == 0);
    launch_decode_rows(raw_t, bf16.data(), DType::BF16, &overflow, nullptr);
    for (size_t i = 0; i < want.size(); i++) {
      INFO(dtype_name(t) << " element " << i);
      REQUIRE(f32_to_bits(f32[i]) == f32_to_bits(want[i]));
      REQUIRE(f16[i] == f32_to_f16(want[i]));
      REQUIRE(bf16[i] == f32_to_bf16(want[i]));
    }
  }
}

TEST_CASE("decoding to f16 flags a value outside the f16 range", "[kernels][emulator][dequant]") {
  std::vector<float> w = {1.0f, -70000.0f, 3.0f, 0.5f};
  const Tensor raw{w.data(), DType::F32, Device::Cuda, 1, 4};
  std::vector<uint16_t> out(4);
  unsigned overflow = 0;
  launch_decode_rows(raw, out.data(), DType::F16, &overflow, nullptr);
  CHECK(overflow == 1);
  w[1] = -65504.0f;  // the largest f16 magnitude still fits
  overflow = 0;
  launch_decode_rows(raw, out.data(), DType::F16, &overflow, nullptr);
  CHECK(overflow == 0);
  CHECK(out[1] == f32_to_f16(-65504.0f));
}

TEST_CASE("activations are converted to bf16 and to shifted f16 exactly", "[kernels][emulator][matmul]") {
  std::vector<float> x = random_floats(3, 1000, -8, 8);
  std::vector<uint16_t> out(x.size());
  launch_to_bf16(x.data(), static_cast<int64_t>(x.size()), out.data(), nullptr);
  for (size_t i = 0; i < x.size(); i++) REQUIRE(out[i] == f32_to_bf16(x[i]));

  unsigned absmax = 0;
  float alpha = 0;
  launch_to_half_scaled(x.data(), static_cast<int64_t>(x.size()), out.data(), &absmax, &alpha, nullptr);
  CHECK(alpha == 1.0f);  // max |x| < 8 fits f16: no shift
  for (size_t i = 0; i < x.size(); i++) REQUIRE(out[i] == f32_to_f16(x[i]));

  // max |x| = 1e6 needs 2^-5: 1e6 / 32 = 31250 < 2^15, while 2^-4 leaves 62500 > 2^15.
  x[17] = -1.0e6f;
  launch_to_half_scaled(x.data(), static_cast<int64_t>(x.size()), out.data(), &absmax, &alpha, nullptr);
  CHECK(alpha == 32.0f);
  for (size_t i = 0; i < x.size(); i++) REQUIRE(out[i] == f32_to_f16(x[i] / 32.0f));
}

TEST_CASE("the tensor-core output starts as bias, accumulated or not", "[kernels][emulator][matmul]") {
  const int64_t m = 3, n = 5;
  std::vector<float> bias = random_floats(4, n), y0 = random_floats(5, m * n);
  std::vector<float> y = y0;
  launch_prepare_output(y.data(), bias.data(), m, n, true, nullptr);
  for (int64_t i = 0; i < m * n; i++) REQUIRE(y[i] == y0[i] + bias[i % n]);
  std::fill(y.begin(), y.end(), NAN);
  launch_prepare_output(y.data(), bias.data(), m, n, false, nullptr);
  for (int64_t i = 0; i < m * n; i++) REQUIRE(y[i] == bias[i % n]);
  std::fill(y.begin(), y.end(), NAN);
  launch_prepare_output(y.data(), nullptr, m, n, false, nullptr);
  for (float v : y) REQUIRE(v == 0.0f);
}

TEST_CASE("the f32 matmul is right over several row and column tiles", "[kernels][emulator][matmul]") {
  // 130 rows span three 64-row tiles, 70 columns two; k = 50 is not a multiple of the 16-wide slice.
  const int64_t m = 130, n = 70, k = 50;
  std::vector<float> x = random_floats(6, m * k), w = random_floats(7, n * k), bias = random_floats(8, n);
  std::vector<float> want(m * n), got(m * n, NAN);
  MatmulArgs a;
  a.x = host_tensor(x, m, k);
  a.w = host_tensor(w, n, k);
  a.bias = host_tensor(bias, 1, n);
  a.y = host_tensor(want, m, n);
  cpu::ref::matmul(a);
  a.y = host_tensor(got, m, n);
  launch_matmul_f32(a, nullptr);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = std::fabs(bias[j]);
      for (int64_t p = 0; p < k; p++) s += std::fabs(x[i * k + p] * w[j * k + p]);
      INFO("row " << i << " column " << j);
      REQUIRE(std::fabs(static_cast<double>(got[i * n + j]) - want[i * n + j]) <= (k + 2) * kF32Eps * s);
    }
}

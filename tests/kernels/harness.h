// Kernel-test harness: one test body runs against every compiled backend (the CPU fast path and,
// when built and a device is present, CUDA) and compares with the scalar reference (cpu/ref/).
// Inputs come from one seeded RNG; device outputs are poisoned (NaN) before each call so an
// unwritten element fails; on failure the report gives max-abs, NMSE and the worst index.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend.h"

namespace embed::test {

// The documented RNG for kernel inputs: mt19937 seeded per test, uniform in [lo, hi).
inline std::vector<float> random_floats(uint32_t seed, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline Tensor host_tensor(std::vector<float>& v, int64_t rows, int64_t cols) {
  REQUIRE(static_cast<int64_t>(v.size()) == rows * cols);
  return Tensor{v.data(), DType::F32, Device::Cpu, rows, cols};
}

struct BackendUnderTest {
  std::string name;
  std::unique_ptr<Backend> backend;
  // The arithmetic of its matmul and attention products (docs/kernels.md): each product x*w is
  // computed with a relative error of at most product_rel_error (0: an exact f32 product) and
  // reaches the f32 sum as products_per_term additions (the split-bf16 AMX path adds three
  // partial products per term). The other ops are f32 on every backend.
  double product_rel_error = 0;
  int products_per_term = 1;
  // A ceiling on the normalized mean squared error of matmul/attention outputs: far below what a
  // systematic mistake (a dropped partial product, a misplaced tile) gives, well above the
  // arithmetic's random rounding.
  double nmse_ceiling = 1e-12;
  // Compute type Int8: matmuls with block-quantized weights take activations quantized the way
  // llama.cpp does (cpu/llama_cpp_rounding.h) and multiply them exactly in integers.
  bool quantizes_activations = false;
};

// Worst-case |error| of a sum of k products with sum |x*y| = abs_sum on `b`, f32 accumulation
// included: (product_rel_error + (products_per_term * k + 2) eps_f32) * abs_sum.
double product_sum_tolerance(const BackendUnderTest& b, int64_t k, double abs_sum);

// The backends this test executable checks: every CPU kernel level this machine runs (AVX2,
// AVX-512, AMX in its f32 and bf16 compute types), or in the CUDA executables the CUDA backend
// (when a device is present) or its CPU emulation; see harness.cpp. The scalar path is the
// oracle, not a subject.
std::vector<BackendUnderTest> backends_under_test(int cpu_threads = 2);

// In the CUDA executables, the CUDA backend in its default (tensor-core) mode for tests with
// 16-bit tolerances; nullptr (with a warning) where there is no device, and in the CPU executable.
std::unique_ptr<Backend> tensor_core_backend();

// Copies host bytes into backend memory and keeps the allocation alive for the test.
class DeviceArena {
 public:
  explicit DeviceArena(Backend& b) : b_(b) {}
  Tensor upload(const Tensor& host);
  // The same, as a view starting `offset` elements into its buffer (misaligned rows).
  Tensor upload_offset(const Tensor& host, int64_t offset);
  Tensor poisoned_offset(DType dtype, int64_t rows, int64_t cols, int64_t offset);
  Tensor upload_bytes(const void* data, size_t bytes, DType dtype, int64_t rows, int64_t cols);
  // Output buffer filled with NaN bytes (poison).
  Tensor poisoned(DType dtype, int64_t rows, int64_t cols);
  const int32_t* upload_ints(const std::vector<int32_t>& v);
  const float* upload_floats(const std::vector<float>& v);
  std::vector<float> download(const Tensor& t);

 private:
  Backend& b_;
  std::vector<DeviceBuffer> buffers_;
};

struct Mismatch {
  double max_abs = 0;
  double nmse = 0;
  size_t worst = 0;
  size_t non_finite = 0;
};

Mismatch compare(const std::vector<float>& got, const std::vector<float>& want);

// Asserts |got - want| <= atol + rtol * |want| elementwise and reports the statistics on failure.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const std::string& what, int64_t cols = 0);

constexpr double kF32Eps = 1.1920928955078125e-07;  // 2^-23

}  // namespace embed::test

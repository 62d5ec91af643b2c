// Kernel-test harness implementation.
#include "tests/kernels/harness.h"

#include <sstream>

#include "cpu/isa.h"
#if defined(EMBED_TEST_DEVICE_CUDA_EMULATED)
#include "cuda/cuda_backend.h"
#endif
#include "tests/device_skip.h"

namespace embed::test {

// One executable per subject, built from the same test sources (tests/CMakeLists.txt):
// - default: the CPU fast path;
// - EMBED_TEST_DEVICE_CUDA: the CUDA backend only, or nothing (with a warning) without a device;
// - EMBED_TEST_DEVICE_CUDA_EMULATED: the CUDA backend's kernels run by the CPU emulator.
// CUDA computes everything in f32 here (compute type f32, the default): these tests' tolerances are f32 ones; the
// tensor-core paths have their own tests (tests/cuda/).
std::vector<BackendUnderTest> backends_under_test(int cpu_threads) {
  std::vector<BackendUnderTest> out;
#if defined(EMBED_TEST_DEVICE_CUDA)
  (void)cpu_threads;
  std::string why;
  if (!backend_available(Device::Cuda, &why)) {
    static bool warned = false;  // printed once, recorded in every test case (tests/device_skip.h)
    if (!warned) WARN("no CUDA device: skipped (" << why << ")");
    warned = true;
    SUCCEED("no CUDA device: skipped (" << why << ")");
    return out;
  }
  BackendOptions o;
  o.device = Device::Cuda;
  o.compute_type = ComputeType::F32;
  out.push_back({"cuda", create_backend(o)});
#elif defined(EMBED_TEST_DEVICE_CUDA_EMULATED)
  (void)cpu_threads;
  BackendOptions o;
  o.device = Device::Cuda;
  o.compute_type = ComputeType::F32;
  out.push_back({"cuda-emulated", cuda::create_cuda_backend(o)});
#else
  // Every level this CPU runs, each forced by name (the kernel tables of cpu/kernel_table.cpp).
  BackendOptions o;
  o.threads = cpu_threads;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx}) {
    if (!cpu::isa_available(isa)) continue;
    o.cpu_isa = isa;
    o.compute_type = ComputeType::F32;
    BackendUnderTest b{std::string("cpu-") + cpu_isa_name(isa), create_backend(o)};
    if (isa == CpuIsa::Amx) {
      // Operands split into two bf16 parts, three partial products (amx_tile.h): the dropped
      // lo*lo' term and the two splits each err by at most 2^-16 of the product.
      b.product_rel_error = 3 * std::ldexp(1.0, -16);
      b.products_per_term = 3;
      b.nmse_ceiling = 1e-9;
    }
    out.push_back(std::move(b));
    if (isa == CpuIsa::Avx512 && cpu::cpu_features().avx512bw && cpu::cpu_features().avx512vnni) {
      // Compute type int8 without AMX (VNNI); float weights and attention as cpu-avx512.
      o.compute_type = ComputeType::Int8;
      BackendUnderTest i8{"cpu-avx512-int8", create_backend(o)};
      i8.quantizes_activations = true;
      out.push_back(std::move(i8));
      o.compute_type = ComputeType::F32;
    }
    if (isa == CpuIsa::Avx512 && cpu::cpu_features().avx512bw && cpu::cpu_features().avx512bf16) {
      // Compute type bf16 without AMX (vdpbf16ps): one product of bf16-rounded operands, as
      // cpu-amx-bf16 (each rounding errs by at most 2^-8), in the matmuls and attention; quantized weights as cpu-avx512.
      o.compute_type = ComputeType::BF16;
      BackendUnderTest bf{"cpu-avx512-bf16", create_backend(o)};
      bf.product_rel_error = 2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16);
      bf.nmse_ceiling = 1e-4;
      out.push_back(std::move(bf));
      o.compute_type = ComputeType::F32;
    }
    if (isa == CpuIsa::Amx) {
      o.compute_type = ComputeType::Int8;
      BackendUnderTest i8{"cpu-amx-int8", create_backend(o)};
      i8.product_rel_error = 3 * std::ldexp(1.0, -16);  // float weights and attention: as cpu-amx
      i8.products_per_term = 3;
      i8.nmse_ceiling = 1e-9;
      i8.quantizes_activations = true;
      out.push_back(std::move(i8));
      o.compute_type = ComputeType::BF16;
      // One product of bf16-rounded operands: each rounding errs by at most 2^-8.
      BackendUnderTest bf{"cpu-amx-bf16", create_backend(o)};
      bf.product_rel_error = 2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16);
      bf.nmse_ceiling = 1e-4;
      out.push_back(std::move(bf));
    }
  }
  if (out.empty()) WARN("CPU has no AVX2/FMA/F16C: only the scalar path exists, nothing to compare");
#endif
  return out;
}

std::unique_ptr<Backend> tensor_core_backend() {
  BackendOptions o;
  o.device = Device::Cuda;
#if defined(EMBED_TEST_DEVICE_CUDA_EMULATED)
  return cuda::create_cuda_backend(o);
#elif defined(EMBED_TEST_DEVICE_CUDA)
  std::string why;
  if (!backend_available(Device::Cuda, &why)) {
    EMBED_SKIP_NO_DEVICE("no CUDA device (" << why << ")");
    return nullptr;
  }
  return create_backend(o);
#else
  return nullptr;
#endif
}

double product_sum_tolerance(const BackendUnderTest& b, int64_t k, double abs_sum) {
  return (b.product_rel_error + (b.products_per_term * static_cast<double>(k) + 2) * kF32Eps) * abs_sum;
}

Tensor DeviceArena::upload_bytes(const void* data, size_t bytes, DType dtype, int64_t rows, int64_t cols) {
  buffers_.emplace_back(&b_, bytes);
  b_.upload(buffers_.back().data(), data, bytes);
  return Tensor{buffers_.back().data(), dtype, b_.device(), rows, cols};
}

Tensor DeviceArena::upload(const Tensor& host) { return upload_bytes(host.data, host.bytes(), host.dtype, host.rows, host.cols); }

Tensor DeviceArena::upload_offset(const Tensor& host, int64_t offset) {
  const size_t eb = dtype_row_bytes(host.dtype, 1);
  std::vector<uint8_t> bytes(static_cast<size_t>(offset) * eb, 0);
  const auto* src = static_cast<const uint8_t*>(host.data);
  bytes.insert(bytes.end(), src, src + host.bytes());
  Tensor t = upload_bytes(bytes.data(), bytes.size(), host.dtype, 1, static_cast<int64_t>(bytes.size() / eb));
  t.data = static_cast<uint8_t*>(t.data) + static_cast<size_t>(offset) * eb;
  t.rows = host.rows;
  t.cols = host.cols;
  return t;
}

Tensor DeviceArena::poisoned_offset(DType dtype, int64_t rows, int64_t cols, int64_t offset) {
  Tensor t = poisoned(dtype, 1, rows * cols + offset);
  t.data = static_cast<uint8_t*>(t.data) + static_cast<size_t>(offset) * dtype_row_bytes(dtype, 1);
  t.rows = rows;
  t.cols = cols;
  return t;
}

Tensor DeviceArena::poisoned(DType dtype, int64_t rows, int64_t cols) {
  const size_t bytes = dtype_row_bytes(dtype, cols) * static_cast<size_t>(rows);
  std::vector<uint8_t> nan_bytes(bytes, 0xFF);  // 0xFFFFFFFF is a NaN in f32
  return upload_bytes(nan_bytes.data(), bytes, dtype, rows, cols);
}

const int32_t* DeviceArena::upload_ints(const std::vector<int32_t>& v) {
  return static_cast<const int32_t*>(upload_bytes(v.data(), v.size() * 4, DType::I32, 1, static_cast<int64_t>(v.size())).data);
}

const float* DeviceArena::upload_floats(const std::vector<float>& v) {
  return static_cast<const float*>(upload_bytes(v.data(), v.size() * 4, DType::F32, 1, static_cast<int64_t>(v.size())).data);
}

std::vector<float> DeviceArena::download(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  b_.download(out.data(), t.data, out.size() * 4);
  return out;
}

Mismatch compare(const std::vector<float>& got, const std::vector<float>& want) {
  Mismatch m;
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < want.size(); i++) {
    if (!std::isfinite(got[i])) {
      m.non_finite++;
      m.worst = i;
      m.max_abs = INFINITY;
      continue;
    }
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (d > m.max_abs) {
      m.max_abs = d;
      m.worst = i;
    }
    err2 += d * d;
    ref2 += static_cast<double>(want[i]) * want[i];
  }
  m.nmse = ref2 > 0 ? err2 / ref2 : err2;
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const std::string& what, int64_t cols) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const double tol = atol + rtol * std::fabs(static_cast<double>(want[i]));
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
      if (!bad) first_bad = i;
      bad++;
    }
  }
  if (bad) {
    const Mismatch m = compare(got, want);
    std::ostringstream os;
    os << what << ": " << bad << " of " << want.size() << " elements out of tolerance (atol " << atol << ", rtol " << rtol
       << "); max-abs " << m.max_abs << ", NMSE " << m.nmse << ", non-finite " << m.non_finite << "; worst index " << m.worst;
    if (cols > 0) os << " (row " << m.worst / cols << ", col " << m.worst % cols << ")";
    os << " got " << got[m.worst] << " want " << want[m.worst] << "; first bad index " << first_bad;
    FAIL(os.str());
  }
  SUCCEED(what);
}

}  // namespace embed::test

// CudaBackend: the Backend on one NVIDIA GPU. Each instance owns a stream (its ops run on it in
// order; download() waits for it), its cuBLAS state and small scratch buffers. Device memory
// comes from cudaMalloc through alloc(); the engine's Workspace keeps steady-state batches free
// of allocations, and the matmul scratch only grows. Weights are uploaded once by load_weight and
// converted there (docs/cuda.md: precision modes and their memory cost).
#include "cuda/cuda_backend.h"

#include <cstdio>

#include "cuda/cuda_check.h"
#include "cuda/kernels.cuh"
#if !defined(EMBED_CUDA_EMULATE)
#include "cuda/cublas_gemm.h"
#endif

#ifndef EMBED_CUDA_ARCHS_TEXT
#define EMBED_CUDA_ARCHS_TEXT "80, 90"
#endif

namespace embed::cuda {
namespace {

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Why cudaGetDeviceCount failed, in words a user can act on.
std::string no_device_text(cudaError_t e) {
  std::string hint;
  if (e == cudaErrorInsufficientDriver) hint = "; no NVIDIA driver is loaded, or it is older than this build's CUDA runtime needs";
  if (e == cudaErrorNoDevice) hint = "; the driver sees no GPU (check CUDA_VISIBLE_DEVICES)";
  return "no CUDA device found (cudaGetDeviceCount: " + error_text(e) + hint + ")";
}

// Slots of the backend's small device array.
constexpr int kAlpha = 0;     // GEMM alpha written by the f16 conversion (2^s)
constexpr int kOne = 1;       // 1.0f: the GEMM beta, and alpha for bf16
constexpr int kAbsmax = 2;    // max |x| bits of the activation being converted
constexpr int kOverflow = 3;  // set by the f16 weight decoder when a value does not fit
constexpr int kAttentionAbsmax = 4;  // 3 words: max |q|, |k|, |v| bits for the tensor-core attention
constexpr int kSlots = 8;

class CudaBackend final : public Backend {
 public:
  CudaBackend(const BackendOptions& o, const cudaDeviceProp& prop);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::Cuda; }
  std::string name() const override { return name_; }

  void* alloc(size_t bytes) override;
  void free(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void sync() override;
  Tensor load_weight(const Tensor& host, WeightUse use) override;
  void release_weight(const Tensor& t) override { free(t.data); }

  bool supports(Op op, DType dtype) const override;

  void gather(const GatherArgs& a) override { use_device(); launch_gather(a, stream_); }
  void matmul(const MatmulArgs& a) override;
  void layer_norm(const LayerNormArgs& a) override { use_device(); launch_layer_norm(a, stream_); }
  void rms_norm(const RmsNormArgs& a) override { use_device(); launch_rms_norm(a, stream_); }
  void rope(const RopeArgs& a) override { use_device(); launch_rope(a, stream_); }
  void attention(const AttentionArgs& a) override;
  void activation(const ActivationArgs& a) override { use_device(); launch_activation(a, stream_); }
  void glu(const GluArgs& a) override { use_device(); launch_glu(a, stream_); }
  void add(const AddArgs& a) override { use_device(); launch_add(a, stream_); }
  void scale(const ScaleArgs& a) override { use_device(); launch_scale(a, stream_); }
  void pool(const PoolArgs& a) override { use_device(); launch_pool(a, stream_); }
  void softmax(const SoftmaxArgs& a) override { use_device(); launch_softmax(a, stream_); }

 private:
  // The current device is per host thread, and a Runner may call from any thread.
  void use_device() const {
    int current = -1;
    EMBED_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device_) EMBED_CUDA_CHECK(cudaSetDevice(device_));
  }
  Tensor decode_weight(const Tensor& host, DType target);
  void matmul_tensor_cores(const MatmulArgs& a);
#if !defined(EMBED_CUDA_EMULATE)
  void* activation_scratch(size_t bytes);
#endif

  int device_;
  bool f32_math_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  float* slots_ = nullptr;
  void* act_ = nullptr;
  size_t act_bytes_ = 0;
#if !defined(EMBED_CUDA_EMULATE)
  std::unique_ptr<CublasGemm> gemm_;  // created by the first tensor-core matmul
#endif
};

CudaBackend::CudaBackend(const BackendOptions& o, const cudaDeviceProp& prop)
    : device_(o.cuda_device), f32_math_(o.compute_type == ComputeType::F32) {
  name_ = "cuda:" + std::to_string(device_) + " (" + prop.name + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
          (f32_math_ ? "; compute f32)" : "; compute bf16: tensor cores, 16-bit inputs)");
  EMBED_CUDA_CHECK(cudaSetDevice(device_));
  EMBED_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    slots_ = static_cast<float*>(alloc(kSlots * sizeof(float)));
    const float init[kSlots] = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    upload(slots_, init, sizeof(init));
    sync();
  } catch (...) {
    if (slots_) cudaFree(slots_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  // Nothing here can report an error (destructors run during unwinding too): best effort.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
#if !defined(EMBED_CUDA_EMULATE)
  gemm_.reset();
#endif
  if (act_) cudaFree(act_);
  if (slots_) cudaFree(slots_);
  cudaStreamDestroy(stream_);
}

void* CudaBackend::alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  use_device();
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // an allocation failure is not sticky: clear it and report
    fail(ErrorKind::OutOfMemory, "cuda: cannot allocate " + std::to_string(bytes) + " bytes on " + name_);
  }
  EMBED_CUDA_CHECK(e);
  return p;
}

void CudaBackend::free(void* p) {
  if (!p) return;
  // Called from destructors (DeviceBuffer, Workspace), so it must not throw: a failure here
  // follows a device error that an earlier call has already reported. The stream is drained
  // first because kernels still queued may read the buffer.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  const cudaError_t e = cudaFree(p);
  if (e != cudaSuccess) std::fprintf(stderr, "embed: cudaFree failed on %s: %s\n", name_.c_str(), error_text(e).c_str());
}

void CudaBackend::upload(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  use_device();
  // From pageable host memory the copy is staged before the call returns, so `src` may be
  // freed at once (CUDA runtime API, "API synchronization behavior").
  EMBED_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::download(void* dst, const void* src, size_t bytes) {
  use_device();
  if (bytes) EMBED_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  EMBED_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  use_device();
  EMBED_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::sync() {
  use_device();
  EMBED_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

bool CudaBackend::supports(Op op, DType dtype) const {
  if (op == Op::Gather || op == Op::Matmul) return dtype != DType::I32;  // every weight type decodes on the device
  return dtype == DType::F32;
}

// Vectors and tables are copied as they are (gather decodes table rows exactly, from any type);
// matmul weights are converted for their matmul path (docs/cuda.md).
Tensor CudaBackend::load_weight(const Tensor& host, WeightUse use) {
  EMBED_CHECK(host.device == Device::Cpu, "load_weight takes a host tensor");
  const bool as_is = use != WeightUse::Matmul || host.dtype == DType::F32 ||
                     (!f32_math_ && (host.dtype == DType::F16 || host.dtype == DType::BF16));
  if (!as_is) return decode_weight(host, f32_math_ ? DType::F32 : DType::F16);
  Tensor dev{alloc(host.bytes()), host.dtype, Device::Cuda, host.rows, host.cols};
  upload(dev.data, host.data, host.bytes());
  sync();  // other backend instances (a Runner's) read weights from their own streams
  return dev;
}

// Uploads the raw bytes once, decodes them on the device, keeps only the decoded copy. An f16
// target falls back to bf16 when a value does not fit f16 (never seen in real weights, but a
// silent inf would poison every vector).
Tensor CudaBackend::decode_weight(const Tensor& host, DType target) {
  DeviceBuffer raw(this, host.bytes());
  upload(raw.data(), host.data, host.bytes());
  const Tensor raw_dev{raw.data(), host.dtype, Device::Cuda, host.rows, host.cols};
  Tensor out{alloc(dtype_row_bytes(target, host.cols) * static_cast<size_t>(host.rows)), target, Device::Cuda, host.rows,
             host.cols};
  try {
    auto* overflow = reinterpret_cast<unsigned*>(slots_ + kOverflow);
    EMBED_CUDA_CHECK(cudaMemsetAsync(overflow, 0, sizeof(unsigned), stream_));
    launch_decode_rows(raw_dev, out.data, target, overflow, stream_);
    if (target == DType::F16) {
      unsigned overflowed = 0;
      download(&overflowed, overflow, sizeof(overflowed));
      if (overflowed) {
        out.dtype = DType::BF16;
        launch_decode_rows(raw_dev, out.data, DType::BF16, overflow, stream_);
      }
    }
    sync();
  } catch (...) {
    free(out.data);
    throw;
  }
  return out;
}

void CudaBackend::matmul(const MatmulArgs& in) {
  use_device();
  MatmulArgs a = in;
  a.activation.reset();  // not fused here: the activation kernel runs after
  if (a.w.dtype == DType::F32) {
    launch_matmul_f32(a, stream_);
  } else {
    EMBED_CHECK(a.w.dtype == DType::F16 || a.w.dtype == DType::BF16,
                std::string("cuda matmul: weight type ") + dtype_name(a.w.dtype) + " did not come from load_weight");
    matmul_tensor_cores(a);
  }
  if (in.activation) activation(ActivationArgs{in.y, in.y, *in.activation});
}

void CudaBackend::attention(const AttentionArgs& a) {
  use_device();
  // The KV-Embedding prefix and the position bias are features of the f32 kernel only.
  if (!f32_math_ && a.prefix_k.empty() && !a.position_bias() && attention_tensor_cores_supported(a))
    launch_attention_tensor_cores(a, reinterpret_cast<unsigned*>(slots_ + kAttentionAbsmax), stream_);
  else
    launch_attention(a, stream_);
}

#if !defined(EMBED_CUDA_EMULATE)
void* CudaBackend::activation_scratch(size_t bytes) {
  if (bytes > act_bytes_) {
    free(act_);
    act_ = nullptr;
    act_bytes_ = 0;
    act_ = alloc(bytes);
    act_bytes_ = bytes;
  }
  return act_;
}
#endif

void CudaBackend::matmul_tensor_cores(const MatmulArgs& a) {
#if defined(EMBED_CUDA_EMULATE)
  fail(ErrorKind::Unsupported, "the CPU emulator of the CUDA backend has no cuBLAS: f16, bf16 and quantized weights in compute type bf16 need a GPU (compute type f32 runs them here)");
#else
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  if (m == 0 || n == 0) return;
  auto* x16 = static_cast<uint16_t*>(activation_scratch(static_cast<size_t>(m * k) * 2));
  const float* alpha = slots_ + kOne;
  if (a.w.dtype == DType::F16) {
    launch_to_half_scaled(a.x.ptr<const float>(), m * k, x16, reinterpret_cast<unsigned*>(slots_ + kAbsmax), slots_ + kAlpha,
                          stream_);
    alpha = slots_ + kAlpha;
  } else {
    launch_to_bf16(a.x.ptr<const float>(), m * k, x16, stream_);
  }
  // cuBLAS then adds alpha * x . w^T to y (beta = 1): y starts as (accumulate ? y : 0) + bias
  // (nothing to prepare for a residual add without bias).
  if (!a.accumulate || !a.bias.empty())
    launch_prepare_output(a.y.ptr<float>(), a.bias.empty() ? nullptr : a.bias.ptr<const float>(), m, n, a.accumulate, stream_);
  if (!gemm_) gemm_ = std::make_unique<CublasGemm>(stream_);
  gemm_->run(a.w.dtype, a.w.data, x16, a.y.ptr<float>(), m, n, k, alpha, slots_ + kOne);
#endif
}

}  // namespace

bool cuda_device_available(std::string* why_not) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why_not) *why_not = no_device_text(e);
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "no CUDA device found (cudaGetDeviceCount returned 0 devices)";
    return false;
  }
  std::string seen;
  for (int d = 0; d < count; d++) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    if (prop.major >= 8) return true;
    seen += (seen.empty() ? "" : ", ") + std::string(prop.name) + " (" + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")";
  }
  (void)cudaGetLastError();
  if (why_not)
    *why_not = "no CUDA device of compute capability 8.0 or newer (found " + seen + "); this build has kernels for " +
               "CUDA architectures " EMBED_CUDA_ARCHS_TEXT;
  return false;
}

std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options) {
  // Refused before the device is looked at: the answer does not depend on which GPU is there.
  if (options.compute_type == ComputeType::Int8)
    fail(ErrorKind::Unsupported, "compute type int8 is not available on device cuda: it has no int8 kernels (f32 and bf16 are)");
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    fail(ErrorKind::Unsupported, "cannot use device cuda: " + no_device_text(e));
  }
  if (options.cuda_device < 0 || options.cuda_device >= count)
    fail(ErrorKind::InvalidArgument, "cannot use device cuda:" + std::to_string(options.cuda_device) + ": this machine has " +
                                         std::to_string(count) + " CUDA device(s)");
  cudaDeviceProp prop{};
  EMBED_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.cuda_device));
  if (prop.major < 8)
    fail(ErrorKind::Unsupported, "cannot use device cuda:" + std::to_string(options.cuda_device) + " (" + prop.name +
                                     "): compute capability " + std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                                     " is older than 8.0; this build has kernels for CUDA architectures " EMBED_CUDA_ARCHS_TEXT);
  return std::make_unique<CudaBackend>(options, prop);
}

}  // namespace embed::cuda

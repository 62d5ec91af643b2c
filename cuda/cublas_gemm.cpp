// CublasGemm: cuBLAS handle setup and the one GemmEx call of the tensor-core path.
#include "cuda/cublas_gemm.h"

#include <limits>

namespace embed::cuda {
namespace {
// cuBLAS asks for a workspace of at least 32 MiB on Hopper to reach its best kernels.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
}  // namespace

CublasGemm::CublasGemm(cudaStream_t stream) {
  EMBED_CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    EMBED_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    // alpha comes from the device (the f16 overflow guard writes it); beta is a device 1.0.
    EMBED_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE));
    // CUBLAS_DEFAULT_MATH: tensor cores for f16/bf16 inputs, never TF32 for f32 ones.
    EMBED_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    EMBED_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    EMBED_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, kWorkspaceBytes));
  } catch (...) {
    if (workspace_) cudaFree(workspace_);
    cublasDestroy(handle_);
    throw;
  }
}

CublasGemm::~CublasGemm() {
  // Destructors cannot report: a failure here would follow an error already thrown.
  cublasDestroy(handle_);
  if (workspace_) cudaFree(workspace_);
}

void CublasGemm::run(DType type, const void* w, const void* x, float* y, int64_t m, int64_t n, int64_t k, const float* alpha,
                     const float* one) {
  EMBED_CHECK(type == DType::F16 || type == DType::BF16, "CublasGemm: inputs must be f16 or bf16");
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (m > kMax || n > kMax || k > kMax)
    fail(ErrorKind::Unsupported, "cuda matmul: a dimension exceeds 2^31 - 1 (m=" + std::to_string(m) + ", n=" + std::to_string(n) +
                                     ", k=" + std::to_string(k) + ")");
  const cudaDataType_t t = type == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  // Row-major y[m, n] is column-major y^T[n, m] = w[n, k] . x^T[k, m]: w (column-major k x n,
  // leading dimension k) transposed, x (column-major k x m, leading dimension k) as is.
  EMBED_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, ni, mi, ki, alpha, w, t, ki, x, t, ki, one, y, CUDA_R_32F, ni,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace embed::cuda

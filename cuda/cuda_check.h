// EMBED_CUDA_CHECK / EMBED_CUBLAS_CHECK: every CUDA and cuBLAS call goes through these; a failure
// becomes embed::Error(Device) naming the call, the error string and file:line. (Under the CPU
// emulator, EMBED_CUDA_EMULATE, there is no cuBLAS and the runtime is cuda/emulator.h.)
#pragma once

#if defined(EMBED_CUDA_EMULATE)
#include "cuda/emulator.h"
#else
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

#include <string>

#include "base/error.h"

namespace embed::cuda {

[[noreturn]] inline void cuda_failed(const char* call, cudaError_t err, const char* file, int line) {
  fail(err == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Device,
       std::string("CUDA call ") + call + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") at " +
           file + ":" + std::to_string(line));
}

#if !defined(EMBED_CUDA_EMULATE)
[[noreturn]] inline void cublas_failed(const char* call, cublasStatus_t st, const char* file, int line) {
  fail(st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorKind::OutOfMemory : ErrorKind::Device,
       std::string("cuBLAS call ") + call + " failed: " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) +
           ") at " + file + ":" + std::to_string(line));
}
#endif

}  // namespace embed::cuda

#define EMBED_CUDA_CHECK(call)                                                         \
  do {                                                                                 \
    const cudaError_t embed_err_ = (call);                                             \
    if (embed_err_ != cudaSuccess) ::embed::cuda::cuda_failed(#call, embed_err_, __FILE__, __LINE__); \
  } while (0)

#define EMBED_CUBLAS_CHECK(call)                                                            \
  do {                                                                                      \
    const cublasStatus_t embed_st_ = (call);                                                \
    if (embed_st_ != CUBLAS_STATUS_SUCCESS) ::embed::cuda::cublas_failed(#call, embed_st_, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface at once (cudaGetLastError does not
// wait for the device); faults inside a kernel surface at the next synchronizing call.
#define EMBED_CUDA_CHECK_LAUNCH() EMBED_CUDA_CHECK(cudaGetLastError())

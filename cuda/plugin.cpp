// C entry points of the CUDA backend plugin (libembed-cuda.so), opened with dlopen by
// engine/backend_registry.cpp so that only users of `--device cuda` load the CUDA runtime.
#include <string>

#include "cuda/cuda_backend.h"

extern "C" {

__attribute__((visibility("default"))) bool embed_cuda_device_available(std::string* why_not) {
  return embed::cuda::cuda_device_available(why_not);
}

// The caller owns the returned backend (deleted through Backend's virtual destructor); errors are
// thrown as embed::Error like every other backend call.
__attribute__((visibility("default"))) embed::Backend* embed_cuda_create_backend(const embed::BackendOptions* options) {
  return embed::cuda::create_cuda_backend(*options).release();
}

}  // extern "C"

// The CUDA backend's public entry points: what engine/backend_registry.cpp (and tools) call.
// No CUDA header leaks from here; the backend class itself lives in cuda/cuda_backend.cpp.
#pragma once

#include <memory>
#include <string>

#include "engine/backend.h"

namespace embed::cuda {

// True when the CUDA runtime finds a device of compute capability 8.0 or newer (this build has
// kernels for sm_80 and sm_90, plus sm_80 PTX for newer chips); otherwise *why_not says why.
bool cuda_device_available(std::string* why_not);

// The backend on options.cuda_device. Throws Error(Unsupported) naming the problem when that
// device does not exist or is too old.
std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options);

}  // namespace embed::cuda

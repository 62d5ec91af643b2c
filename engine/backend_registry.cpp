// Creates backends by device. The only file that knows whether the CUDA backend was compiled in.
#include "cpu/cpu_backend.h"
#include "engine/backend.h"
#include "engine/error.h"

#ifdef EMBED_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace embed {

bool backend_available(Device d, std::string* why_not) {
  if (d == Device::Cpu) return true;
#ifdef EMBED_WITH_CUDA
  return cuda::cuda_device_available(why_not);
#else
  if (why_not) *why_not = "this build of embed has no CUDA backend (configure with -DEMBED_CUDA=ON where nvcc is installed)";
  return false;
#endif
}

std::unique_ptr<Backend> create_backend(const BackendOptions& options) {
  if (options.device == Device::Cpu) return std::make_unique<cpu::CpuBackend>(options);
  std::string why;
  if (!backend_available(options.device, &why)) fail(ErrorKind::Unsupported, "cannot use device cuda: " + why);
#ifdef EMBED_WITH_CUDA
  return cuda::create_cuda_backend(options);
#else
  fail(ErrorKind::Unsupported, "cannot use device cuda: " + why);
#endif
}

}  // namespace embed

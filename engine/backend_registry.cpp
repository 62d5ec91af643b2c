// Creates backends by device. The only file that knows how the CUDA backend is reached:
// - EMBED_WITH_CUDA: linked in (the CPU-emulator test builds);
// - EMBED_CUDA_PLUGIN: a shared library (libembed-cuda.so) opened with dlopen on first use, so
//   the embed command, libembed and the Python module never load the CUDA runtime or cuBLAS
//   (hundreds of MB) unless a CUDA device is asked for, and run on machines without CUDA installed;
// - neither: no CUDA backend in this build.
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/isa.h"
#include "engine/backend.h"
#include "base/error.h"

#if defined(EMBED_WITH_CUDA)
#include "cuda/cuda_backend.h"
#elif defined(EMBED_CUDA_PLUGIN)
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#endif

namespace embed {
namespace {

#if defined(EMBED_CUDA_PLUGIN)
// The plugin's C entry points (cuda/plugin.cpp).
struct CudaPlugin {
  bool (*available)(std::string*) = nullptr;
  Backend* (*create)(const BackendOptions*) = nullptr;
  std::string error;
};

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  return dir_of(std::string(buf, static_cast<size_t>(n)));
}

// The folder of the binary holding this code: the Python extension module when the engine is
// linked into one (the wheel ships the plugin beside it), else the executable.
std::string engine_binary_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&engine_binary_dir), &info) == 0 || !info.dli_fname || !*info.dli_fname) return executable_dir();
  return dir_of(info.dli_fname);
}

// Looked for in $EMBED_CUDA_PLUGIN, beside the running executable, beside the binary holding the
// engine (the Python module), then in the build tree.
const CudaPlugin& cuda_plugin() {
  static const CudaPlugin plugin = [] {
    CudaPlugin p;
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("EMBED_CUDA_PLUGIN"); env && *env) candidates.emplace_back(env);
    candidates.push_back(executable_dir() + "/libembed-cuda.so");
    if (const std::string d = engine_binary_dir(); d != executable_dir()) candidates.push_back(d + "/libembed-cuda.so");
    candidates.emplace_back(EMBED_CUDA_PLUGIN);
    std::string errors;
    for (const std::string& path : candidates) {
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        errors += "\n  " + path + ": " + (e ? e : "cannot open");
        continue;
      }
      p.available = reinterpret_cast<bool (*)(std::string*)>(dlsym(h, "embed_cuda_device_available"));
      p.create = reinterpret_cast<Backend* (*)(const BackendOptions*)>(dlsym(h, "embed_cuda_create_backend"));
      if (p.available && p.create) return p;
      errors += "\n  " + path + ": not an embed CUDA plugin";
    }
    p.error = "the CUDA backend library could not be loaded (is the CUDA runtime installed?):" + errors;
    return p;
  }();
  return plugin;
}
#endif

}  // namespace

bool backend_available(Device d, std::string* why_not) {
  if (d == Device::Cpu) return true;
#if defined(EMBED_WITH_CUDA)
  return cuda::cuda_device_available(why_not);
#elif defined(EMBED_CUDA_PLUGIN)
  const CudaPlugin& p = cuda_plugin();
  if (!p.available) {
    if (why_not) *why_not = p.error;
    return false;
  }
  return p.available(why_not);
#else
  if (why_not) *why_not = "this build of embed has no CUDA backend (configure with -DEMBED_CUDA=ON where nvcc is installed)";
  return false;
#endif
}

CpuIsa resolve_cpu_isa(CpuIsa requested) { return cpu::resolve_isa(requested); }

std::unique_ptr<Backend> create_backend(const BackendOptions& options) {
  if (options.device == Device::Cpu) return cpu::create_cpu_backend(options);
  if (options.llama_cpp_rounding)
    fail(ErrorKind::Unsupported, "llama.cpp rounding (--compat llama.cpp) exists on the CPU backend only: use device cpu");
  std::string why;
  if (!backend_available(options.device, &why)) fail(ErrorKind::Unsupported, "cannot use device cuda: " + why);
#if defined(EMBED_WITH_CUDA)
  return cuda::create_cuda_backend(options);
#elif defined(EMBED_CUDA_PLUGIN)
  return std::unique_ptr<Backend>(cuda_plugin().create(&options));
#else
  fail(ErrorKind::Unsupported, "cannot use device cuda: " + why);
#endif
}

}  // namespace embed

// The CPU's features as the kernel reports them in /proc/cpuinfo: an oracle independent of
// cpu/isa.h's own detection (cpuid, xgetbv, arch_prctl), so tests can require that every kernel
// level this machine has is the one in use or under test, instead of silently skipping it.
#pragma once

#include <fstream>
#include <string>

#include "engine/backend.h"

namespace embed::test {

inline bool cpuinfo_has(const std::string& flag) {
  static const std::string flags = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("flags", 0) == 0) return line + " ";
    return std::string();
  }();
  return flags.find(" " + flag + " ") != std::string::npos;
}

// Whether /proc/cpuinfo says this machine can run `isa`'s kernels (cpu/isa.h's requirements).
inline bool cpuinfo_supports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Auto:
    case CpuIsa::Scalar:
      return true;
    case CpuIsa::Avx2:
      return cpuinfo_has("avx2") && cpuinfo_has("fma") && cpuinfo_has("f16c");
    case CpuIsa::Avx512:
      return cpuinfo_supports(CpuIsa::Avx2) && cpuinfo_has("avx512f");
    case CpuIsa::Amx:
      return cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512vl") && cpuinfo_has("avx512dq") &&
             cpuinfo_has("avx512_bf16") && cpuinfo_has("amx_tile") && cpuinfo_has("amx_bf16") && cpuinfo_has("amx_int8");
  }
  return false;
}

// The best level by /proc/cpuinfo (what a backend must pick when nothing forces a level).
inline CpuIsa cpuinfo_best_isa() {
  for (CpuIsa isa : {CpuIsa::Amx, CpuIsa::Avx512, CpuIsa::Avx2})
    if (cpuinfo_supports(isa)) return isa;
  return CpuIsa::Scalar;
}

}  // namespace embed::test

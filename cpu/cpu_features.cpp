// CPU feature detection with the compiler's cpuid builtins.
#include "cpu/cpu_features.h"

namespace embed::cpu {

std::string CpuFeatures::describe() const {
  std::string s;
  s += avx2 ? "avx2 " : "no-avx2 ";
  s += fma ? "fma " : "no-fma ";
  s += f16c ? "f16c" : "no-f16c";
  s += avx512f ? " avx512f" : "";
  return s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.f16c = __builtin_cpu_supports("f16c");
    c.avx512f = __builtin_cpu_supports("avx512f");
#endif
    return c;
  }();
  return f;
}

}  // namespace embed::cpu

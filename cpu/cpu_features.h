// Runtime CPU feature detection, done once; the backend picks kernels from it.
#pragma once

#include <string>

namespace embed::cpu {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool has_fast_path() const { return avx2 && fma && f16c; }
  bool has_avx512() const { return has_fast_path() && avx512f; }
  std::string describe() const;
};

const CpuFeatures& cpu_features();

}  // namespace embed::cpu

// Reference embedding normalization (llama.cpp common_embd_normalize semantics), after
// Matryoshka truncation to the first `dims` values.
#include <cmath>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

void normalize(const NormalizeArgs& a) {
  const int64_t cols = a.x.cols;
  for (int64_t r = 0; r < a.x.rows; r++) {
    const float* x = a.x.ptr<const float>() + r * cols;
    float* y = a.y.ptr<float>() + r * a.dims;
    double sum = 0;
    if (a.p < 0) {
      sum = 1.0;
    } else if (a.p == 0) {
      for (int i = 0; i < a.dims; i++) sum = std::max(sum, std::fabs(static_cast<double>(x[i])));
      sum /= 32760.0;
    } else if (a.p == 2) {
      for (int i = 0; i < a.dims; i++) sum += static_cast<double>(x[i]) * x[i];
      sum = std::sqrt(sum);
    } else {
      for (int i = 0; i < a.dims; i++) sum += std::pow(std::fabs(static_cast<double>(x[i])), a.p);
      sum = std::pow(sum, 1.0 / a.p);
    }
    const double inv = sum > 0 ? 1.0 / sum : 0.0;
    for (int i = 0; i < a.dims; i++) y[i] = static_cast<float>(x[i] * inv);
  }
}

}  // namespace embed::cpu::ref

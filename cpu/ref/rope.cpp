// Reference rotary embedding: theta_i = pos * freq_scale * base^(-2i / n_rot), in double.
#include <cmath>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

void rope(const RopeArgs& a) {
  const int64_t n_tokens = a.x.rows;
  const int half = a.n_rot / 2;
  for (int64_t t = 0; t < n_tokens; t++) {
    const double pos = static_cast<double>(a.positions[t]) * a.freq_scale;
    for (int h = 0; h < a.n_heads; h++) {
      float* x = a.x.ptr<float>() + t * a.x.cols + static_cast<int64_t>(h) * a.d_head;
      for (int i = 0; i < half; i++) {
        const double theta = pos * std::pow(static_cast<double>(a.freq_base), -2.0 * i / a.n_rot);
        const double c = std::cos(theta), s = std::sin(theta);
        const int i0 = a.mode == RopeMode::Neox ? i : 2 * i;
        const int i1 = a.mode == RopeMode::Neox ? i + half : 2 * i + 1;
        const double x0 = x[i0], x1 = x[i1];
        x[i0] = static_cast<float>(x0 * c - x1 * s);
        x[i1] = static_cast<float>(x0 * s + x1 * c);
      }
    }
  }
}

}  // namespace embed::cpu::ref

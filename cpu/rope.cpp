// Rotary embedding (portable): per token, the cos/sin table of its position is computed once
// in double (pos * base^(-2i/n_rot)) and applied to every head. Threads split tokens.
#include <cmath>
#include <vector>

#include "cpu/kernels.h"

namespace embed::cpu {

void rope_fast(const RopeArgs& a, ThreadPool& pool) {
  const int half = a.n_rot / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; i++) inv_freq[static_cast<size_t>(i)] = std::pow(static_cast<double>(a.freq_base), -2.0 * i / a.n_rot);
  pool.parallel_for(a.x.rows, 16, [&](int64_t t0, int64_t t1) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t t = t0; t < t1; t++) {
      const double pos = static_cast<double>(a.positions[t]) * a.freq_scale;
      for (int i = 0; i < half; i++) {
        const double th = pos * inv_freq[static_cast<size_t>(i)];
        cs[static_cast<size_t>(i)] = static_cast<float>(std::cos(th));
        sn[static_cast<size_t>(i)] = static_cast<float>(std::sin(th));
      }
      for (int h = 0; h < a.n_heads; h++) {
        float* x = a.x.ptr<float>() + t * a.x.cols + static_cast<int64_t>(h) * a.d_head;
        for (int i = 0; i < half; i++) {
          const int i0 = a.mode == RopeMode::Neox ? i : 2 * i;
          const int i1 = a.mode == RopeMode::Neox ? i + half : 2 * i + 1;
          const float x0 = x[i0], x1 = x[i1], c = cs[static_cast<size_t>(i)], s = sn[static_cast<size_t>(i)];
          x[i0] = x0 * c - x1 * s;
          x[i1] = x0 * s + x1 * c;
        }
      }
    }
  });
}

}  // namespace embed::cpu

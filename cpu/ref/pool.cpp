// Reference pooling: per-sequence (weighted) mean, first or last token row.
#include <vector>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

void pool(const PoolArgs& a) {
  const int64_t d = a.x.cols;
  const float* x = a.x.ptr<const float>();
  std::vector<double> acc(static_cast<size_t>(d));
  for (int s = 0; s < a.n_seqs; s++) {
    const int begin = a.cu_seqlens_host[s], end = a.cu_seqlens_host[s + 1];
    float* y = a.y.ptr<float>() + s * d;
    if (a.kind != PoolKind::Mean) {
      const int t = a.kind == PoolKind::First ? begin : end - 1;
      for (int64_t i = 0; i < d; i++) y[i] = x[t * d + i];
      continue;
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    double wsum = 0;
    for (int t = begin; t < end; t++) {
      const double w = a.token_weights ? a.token_weights[t] : 1.0;
      wsum += w;
      for (int64_t i = 0; i < d; i++) acc[static_cast<size_t>(i)] += w * x[t * d + i];
    }
    for (int64_t i = 0; i < d; i++) y[i] = wsum > 0 ? static_cast<float>(acc[static_cast<size_t>(i)] / wsum) : 0.0f;
  }
}

}  // namespace embed::cpu::ref

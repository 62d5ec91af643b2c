// Reference attention over packed sequences: full score row per query, softmax in double. With
// kv_rows, a sequence's keys start before its queries (AttentionKvRows): positions are compared
// in the keys' frame. The KV-Embedding prefix (AttentionArgs::prefix_k) is one more logit and
// value per query. The position bias (AttentionArgs::bias_table, alibi_max_bias) is added to each
// logit after the scale.
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

void attention(const AttentionArgs& a) {
  const int group = a.n_heads / a.n_kv_heads;
  const int64_t qs = a.q.cols, ks = a.k.cols, vs = a.v.cols, os = a.out.cols;
  const int32_t* cu_kv = a.kv_rows.on() ? a.kv_rows.cu_seqlens_host : a.cu_seqlens_host;
  std::vector<double> p;
  for (int s = 0; s < a.n_seqs; s++) {
    const int begin = a.cu_seqlens_host[s], end = a.cu_seqlens_host[s + 1];
    const int kv_begin = cu_kv[s], kv_len = cu_kv[s + 1] - kv_begin;
    const int offset = kv_len - (end - begin);  // key position of the first query
    for (int h = 0; h < a.n_heads; h++) {
      const int kvh = h / group;
      for (int i = begin; i < end; i++) {
        const float* q = a.q.ptr<const float>() + i * qs + h * a.d_head;
        p.assign(static_cast<size_t>(kv_len), -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        const int qi = i - begin + offset;
        for (int kj = 0; kj < kv_len; kj++) {
          if (a.causal && kj > qi) continue;
          if (a.window_left >= 0 && qi - kj > a.window_left) continue;
          if (a.window_right >= 0 && kj - qi > a.window_right) continue;
          const float* k = a.k.ptr<const float>() + (kv_begin + kj) * ks + kvh * a.d_head;
          double dot = 0;
          for (int d = 0; d < a.d_head; d++) dot += static_cast<double>(q[d]) * k[d];
          p[static_cast<size_t>(kj)] = dot * a.scale + (a.position_bias() ? a.position_bias_at(h, kj - qi) : 0.0);
          mx = std::max(mx, p[static_cast<size_t>(kj)]);
        }
        const float* pk = a.prefix_k.empty() ? nullptr : a.prefix_k.ptr<const float>() + s * a.prefix_k.cols + kvh * a.d_head;
        const float* pv = a.prefix_v.empty() ? nullptr : a.prefix_v.ptr<const float>() + s * a.prefix_v.cols + kvh * a.d_head;
        double prefix = 0;  // the prefix's logit, then its weight
        if (pk) {
          for (int d = 0; d < a.d_head; d++) prefix += static_cast<double>(q[d]) * pk[d];
          prefix = prefix * a.scale + a.prefix_bias;
          mx = std::max(mx, prefix);
        }
        double sum = 0;
        for (double& v : p) {
          v = std::isinf(v) ? 0.0 : std::exp(v - mx);
          sum += v;
        }
        if (pk) {
          prefix = std::exp(prefix - mx);
          sum += prefix;
        }
        float* o = a.out.ptr<float>() + i * os + h * a.d_head;
        for (int d = 0; d < a.d_head; d++) {
          double acc = pv ? prefix * pv[d] : 0.0;
          for (int kj = 0; kj < kv_len; kj++)
            acc += p[static_cast<size_t>(kj)] * a.v.ptr<const float>()[(kv_begin + kj) * vs + kvh * a.d_head + d];
          o[d] = static_cast<float>(sum > 0 ? acc / sum : 0.0);
        }
      }
    }
  }
}

}  // namespace embed::cpu::ref

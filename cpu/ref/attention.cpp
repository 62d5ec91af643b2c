// Reference attention over packed sequences: full score row per query, softmax in double. With
// kv_rows, a sequence's keys start before its queries (AttentionKvRows): positions are compared
// in the keys' frame. The KV-Embedding prefix (AttentionArgs::prefix_k) is one more logit and
// value per query. The position bias (AttentionArgs::bias_table, alibi_max_bias) is added to each
// logit after the scale.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "cpu/ref/ref.h"
#include "gguf/fp16.h"

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

namespace embed::cpu::ref {
namespace {

float flush_denormal_sum(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }
float to_bf16(float v) { return bf16_to_f32(f32_to_bf16(flush_denormal_sum(v))); }

// One vdpbf16ps-ordered chain: s = 0, then per pair (x[2p + 1] y[2p + 1], then x[2p] y[2p]); n even,
// operands already bf16, y read `y_stride` apart.
float pair_chain(const float* x, const float* y, int64_t y_stride, int n) {
  float s = 0.0f;
  for (int p = 0; p < n; p += 2) {
    s = flush_denormal_sum(s + x[p + 1] * y[(p + 1) * y_stride]);
    s = flush_denormal_sum(s + x[p] * y[p * y_stride]);
  }
  return s;
}

}  // namespace

void attention_bf16_pairs(const AttentionArgs& a) {
  EMBED_CHECK(!a.position_bias(), "ref::attention_bf16_pairs has no position bias (the bf16 kernel takes the f32 attention there)");
  EMBED_CHECK(a.d_head % 2 == 0, "ref::attention_bf16_pairs needs an even head size");
  const int group = a.n_heads / a.n_kv_heads, d = a.d_head;
  const int32_t* cu_kv = a.kv_rows.on() ? a.kv_rows.cu_seqlens_host : a.cu_seqlens_host;
  std::vector<float> q(static_cast<size_t>(d)), k, v, p;
  std::vector<double> e;
  for (int s = 0; s < a.n_seqs; s++) {
    const int begin = a.cu_seqlens_host[s], end = a.cu_seqlens_host[s + 1];
    const int kv_begin = cu_kv[s], kv_len = cu_kv[s + 1] - kv_begin, kv_even = (kv_len + 1) / 2 * 2;
    const int offset = kv_len - (end - begin);
    for (int h = 0; h < a.n_heads; h++) {
      const int kvh = h / group;
      // This head's keys (row-major) and values (column c at v[c * kv_even + j]), rounded, padded to even.
      k.assign(static_cast<size_t>(kv_even) * d, 0.0f);
      v.assign(static_cast<size_t>(kv_even) * d, 0.0f);
      for (int j = 0; j < kv_len; j++)
        for (int c = 0; c < d; c++) {
          k[static_cast<size_t>(j) * d + c] = to_bf16(a.k.ptr<const float>()[(kv_begin + j) * a.k.cols + kvh * d + c]);
          v[static_cast<size_t>(c) * kv_even + j] = to_bf16(a.v.ptr<const float>()[(kv_begin + j) * a.v.cols + kvh * d + c]);
        }
      for (int i = begin; i < end; i++) {
        for (int c = 0; c < d; c++) q[static_cast<size_t>(c)] = to_bf16(a.q.ptr<const float>()[i * a.q.cols + h * d + c]);
        const int qi = i - begin + offset;
        e.assign(static_cast<size_t>(kv_even), -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < kv_len; j++) {
          if (a.causal && j > qi) continue;
          if (a.window_left >= 0 && qi - j > a.window_left) continue;
          if (a.window_right >= 0 && j - qi > a.window_right) continue;
          const float logit = pair_chain(q.data(), k.data() + static_cast<size_t>(j) * d, 1, d) * a.scale;
          e[static_cast<size_t>(j)] = logit;
          mx = std::max(mx, static_cast<double>(logit));
        }
        const float* q32 = a.q.ptr<const float>() + i * a.q.cols + h * d;
        const float* pk = a.prefix_k.empty() ? nullptr : a.prefix_k.ptr<const float>() + s * a.prefix_k.cols + kvh * d;
        const float* pv = a.prefix_v.empty() ? nullptr : a.prefix_v.ptr<const float>() + s * a.prefix_v.cols + kvh * d;
        double prefix = 0;  // from the f32 query and prefix key, as the kernel
        if (pk) {
          for (int c = 0; c < d; c++) prefix += static_cast<double>(q32[c]) * pk[c];
          prefix = prefix * a.scale + a.prefix_bias;
          mx = std::max(mx, prefix);
        }
        double sum = 0;
        p.assign(static_cast<size_t>(kv_even), 0.0f);
        for (int j = 0; j < kv_len; j++) {
          if (std::isinf(e[static_cast<size_t>(j)])) continue;
          const double w = std::exp(e[static_cast<size_t>(j)] - mx);
          sum += w;
          p[static_cast<size_t>(j)] = to_bf16(static_cast<float>(w));
        }
        if (pk) {
          prefix = std::exp(prefix - mx);
          sum += prefix;
        }
        float* o = a.out.ptr<float>() + i * a.out.cols + h * d;
        for (int c = 0; c < d; c++) {
          const double acc = pair_chain(p.data(), v.data() + static_cast<size_t>(c) * kv_even, 1, kv_even) + (pv ? prefix * pv[c] : 0.0);
          o[c] = static_cast<float>(sum > 0 ? acc / sum : 0.0);
        }
      }
    }
  }
}

}  // namespace embed::cpu::ref

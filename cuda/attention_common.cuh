// What the two attention kernels share (attention.cu: f32; attention_tc.cu: tensor cores): the
// kernel parameters, where a sequence's queries and keys are (keys may start before the queries:
// AttentionArgs::kv_rows), the visibility rule of AttentionArgs, and the range of keys a tile of
// queries can see, aligned down to a key-tile boundary counted from the sequence's first key (so
// a sequence's output never depends on what it is packed with). The f32 kernel also takes the
// KV-Embedding prefix (AttentionArgs::prefix_k) and the position bias (AttentionArgs::bias_table,
// alibi_max_bias); the tensor-core kernel does not.
#pragma once

#include "cuda/device.cuh"
#include "engine/backend.h"

namespace embed::cuda {

struct AttentionParams {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  const int32_t* cu_seqlens;
  const int32_t* cu_seqlens_kv;  // AttentionArgs::kv_rows (device), or cu_seqlens when off
  int64_t q_stride, kv_stride;  // out has q's stride
  int group, d_head;            // group = n_heads / n_kv_heads
  float scale;
  bool causal;
  int window_left, window_right;
  const unsigned* absmax;  // tensor-core kernel: bits of max|q|, max|k|, max|v| (device)
  const float* prefix_k;   // AttentionArgs::prefix_k / prefix_v rows (device), or null
  const float* prefix_v;
  int64_t prefix_stride;
  float prefix_bias;
  const float* bias_table;  // AttentionArgs::bias_table (device) [n_buckets, bias_stride], or null
  int64_t bias_stride;
  RelativeBuckets bias_buckets;
  float alibi_max_bias;
  int n_heads;
};

inline AttentionParams attention_params(const AttentionArgs& a, const unsigned* absmax) {
  return AttentionParams{a.q.ptr<const float>(), a.k.ptr<const float>(), a.v.ptr<const float>(), a.out.ptr<float>(),
                         a.cu_seqlens, a.kv_rows.on() ? a.kv_rows.cu_seqlens : a.cu_seqlens, a.q.cols, a.k.cols, a.n_heads / a.n_kv_heads, a.d_head, a.scale, a.causal,
                         a.window_left, a.window_right, absmax,
                         a.prefix_k.empty() ? nullptr : a.prefix_k.ptr<const float>(), a.prefix_v.empty() ? nullptr : a.prefix_v.ptr<const float>(),
                         a.prefix_k.cols, a.prefix_bias, a.bias_table.empty() ? nullptr : a.bias_table.ptr<const float>(),
                         a.bias_table.cols, a.bias_buckets, a.alibi_max_bias, a.n_heads};
}

// Sequence s: queries rows [q_begin, q_begin + q_len) of q and out, keys rows [kv_begin,
// kv_begin + kv_len) of k and v; query i sits at key position offset + i.
struct SeqSpan {
  int q_begin, q_len, kv_begin, kv_len, offset;
};

__device__ __forceinline__ SeqSpan seq_span(const AttentionParams& p, int s) {
  SeqSpan r;
  r.q_begin = p.cu_seqlens[s];
  r.q_len = p.cu_seqlens[s + 1] - r.q_begin;
  r.kv_begin = p.cu_seqlens_kv[s];
  r.kv_len = p.cu_seqlens_kv[s + 1] - r.kv_begin;
  r.offset = r.kv_len - r.q_len;
  return r;
}

// qi, kj: key positions.
__device__ __forceinline__ bool visible(const AttentionParams& p, int qi, int kj) {
  return (!p.causal || kj <= qi) && (p.window_left < 0 || qi - kj <= p.window_left) &&
         (p.window_right < 0 || kj - qi <= p.window_right);
}

// The position bias of head h for key offset r = j - i (AttentionArgs::position_bias_at), with
// the head's ALiBi slope computed once by the caller.
__device__ __forceinline__ float position_bias(const AttentionParams& p, int h, float slope, int r) {
  float b = p.bias_table ? p.bias_table[int64_t{p.bias_buckets(r)} * p.bias_stride + h] : 0.0f;
  const float dist = static_cast<float>(r < 0 ? -r : r);
  return slope > 0.0f ? b - slope * dist : b;
}

// Keys [*begin, *end) that queries at key positions [q_first, q_last] can see, of `len` keys;
// *begin is a multiple of key_tile.
__device__ __forceinline__ void key_range(const AttentionParams& p, int q_first, int q_last, int len, int key_tile,
                                          int* begin, int* end) {
  int b = p.window_left >= 0 ? std::max(0, q_first - p.window_left) : 0;
  int e = len;
  if (p.causal) e = std::min(e, q_last + 1);
  if (p.window_right >= 0) e = std::min(e, q_last + p.window_right + 1);
  *begin = b / key_tile * key_tile;
  *end = e;
}

}  // namespace embed::cuda

// The attention kernel's algorithm (see attention_avx2.cpp), written once and instantiated per
// ISA with that ISA's GEMM tile (a policy with kNR columns and run()); softmax and scaling use
// the AVX2 helpers, which an AVX-512 file compiles with its own flags. Internal linkage: each
// including file gets its own copy, compiled for its ISA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/ref/ref.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::attention_detail {
namespace {

using avx2::exp_ps;
using avx2::hmax;
using avx2::hsum;
using avx2::tail_mask;

constexpr int kMR = 6;  // queries per tile (the GEMM tile's rows)
constexpr int kQueryBlock = 32;

struct Task {
  int seq, kv_head, q0, q1;  // queries [q0, q1) relative to the sequence start
};

// The tasks of every level's attention: whole sequences per (sequence, kv head), so keys are
// packed once per sequence and kv head, unless there are too few such pairs to keep `threads`
// busy; then blocks of kQueryBlock queries.
inline std::vector<Task> plan_tasks(const AttentionArgs& a, int64_t threads) {
  const bool split = static_cast<int64_t>(a.n_seqs) * a.n_kv_heads < 4 * threads;
  std::vector<Task> tasks;
  for (int s = 0; s < a.n_seqs; s++) {
    const int len = a.cu_seqlens_host[s + 1] - a.cu_seqlens_host[s];
    const int block = split ? kQueryBlock : len;
    for (int kvh = 0; kvh < a.n_kv_heads; kvh++)
      for (int q0 = 0; q0 < len; q0 += block) tasks.push_back({s, kvh, q0, std::min(len, q0 + block)});
  }
  return tasks;
}

// Where sequence s is: its queries are rows [q_begin, q_begin + q_len) of q and out, its keys
// rows [kv_begin, kv_begin + kv_len) of k and v, and query i sits at key position offset + i
// (offset > 0 only with AttentionArgs::kv_rows, keys of earlier positions).
struct SeqRows {
  int q_begin, q_len, kv_begin, kv_len, offset;
};

inline SeqRows seq_rows(const AttentionArgs& a, int s) {
  SeqRows r;
  r.q_begin = a.cu_seqlens_host[s];
  r.q_len = a.cu_seqlens_host[s + 1] - r.q_begin;
  const int32_t* cu_kv = a.kv_rows.on() ? a.kv_rows.cu_seqlens_host : a.cu_seqlens_host;
  r.kv_begin = cu_kv[s];
  r.kv_len = cu_kv[s + 1] - r.kv_begin;
  r.offset = r.kv_len - r.q_len;
  return r;
}

// Visible keys [lo, hi) of the query at key position i in a sequence of `len` keys.
inline void visible_range(const AttentionArgs& a, int i, int len, int* lo, int* hi) {
  *lo = 0;
  *hi = a.causal ? i + 1 : len;
  if (a.window_left >= 0) *lo = std::max(*lo, i - a.window_left);
  if (a.window_right >= 0) *hi = std::min(*hi, i + a.window_right + 1);
}

// Keys [*begin, *end) that the queries [q0, q1) of a sequence can see (positions as visible_range).
inline void task_keys(const AttentionArgs& a, const SeqRows& r, int q0, int q1, int* begin, int* end) {
  *begin = a.window_left >= 0 ? std::max(0, r.offset + q0 - a.window_left) : 0;
  *end = a.causal ? r.offset + q1 : r.kv_len;
  if (a.window_right >= 0) *end = std::min(*end, r.offset + q1 + a.window_right);
}

// p[0, n) = exp(scale * s + bias - max) over [lo, hi), 0 elsewhere; returns the sum (8 lanes, then
// scalar). `bias` (optional): the position bias of each column (AttentionArgs::bias_table).
// `prefix` (KV-Embedding, optional): in, the prefix position's logit (scaled, biased); out, its
// weight exp(logit - max), included in the sum and the max.
float softmax_row(float* s, int n, int lo, int hi, float scale, float* prefix = nullptr, const float* bias = nullptr) {
  const __m256 vs = _mm256_set1_ps(scale);
  auto logits = [&](int m) {  // 8 logits from column m
    const __m256 x = _mm256_loadu_ps(s + m);
    return bias ? _mm256_fmadd_ps(x, vs, _mm256_loadu_ps(bias + m)) : _mm256_mul_ps(x, vs);
  };
  auto logit = [&](int m) { return bias ? std::fma(s[m], scale, bias[m]) : s[m] * scale; };
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int m = lo;
  for (; m + 8 <= hi; m += 8) vmax = _mm256_max_ps(vmax, logits(m));
  float mx = hmax(vmax);
  for (; m < hi; m++) mx = std::max(mx, logit(m));
  if (prefix) mx = std::max(mx, *prefix);
  std::fill(s, s + lo, 0.0f);
  std::fill(s + hi, s + n, 0.0f);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  int j = lo;
  for (; j + 8 <= hi; j += 8) {
    const __m256 x = _mm256_loadu_ps(s + j);
    const __m256 e = exp_ps(bias ? _mm256_sub_ps(_mm256_fmadd_ps(x, vs, _mm256_loadu_ps(bias + j)), vm) : _mm256_fmsub_ps(x, vs, vm));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  if (j < hi) {  // tail through the same vector exp
    const __m256i mask = tail_mask(hi - j);
    const __m256 x = _mm256_maskload_ps(s + j, mask);
    const __m256 e = exp_ps(bias ? _mm256_sub_ps(_mm256_fmadd_ps(x, vs, _mm256_maskload_ps(bias + j, mask)), vm) : _mm256_fmsub_ps(x, vs, vm));
    alignas(32) float buf[8];
    _mm256_store_ps(buf, e);
    for (int t = 0; t < hi - j; t++) {
      s[j + t] = buf[t];
      sum += buf[t];
    }
  }
  if (prefix) {
    *prefix = std::exp(*prefix - mx);
    sum += *prefix;
  }
  return sum;
}

// The position bias of head h for the key offsets r = j - i in [r_lo, r_lo + size) (keys j,
// queries i as key positions): row[r - r_lo]. Computed once per task and head.
struct BiasRow {
  std::vector<float> row;
  int r_lo = 0;
  void fill(const AttentionArgs& a, int h, int r_lo_, int r_hi) {
    r_lo = r_lo_;
    row.resize(static_cast<size_t>(std::max(0, r_hi - r_lo + 1)));
    for (int r = r_lo; r <= r_hi; r++) row[static_cast<size_t>(r - r_lo)] = a.position_bias_at(h, r);
  }
  // Biases of the keys from key position j0 on, for the query at key position qi.
  const float* from(int j0, int qi) const { return row.data() + (j0 - qi - r_lo); }
};

// The KV-Embedding prefix logit of one query row of head h (AttentionArgs::prefix_k): scale *
// q . k_prefix + bias, in f32 with one FMA chain per 8 lanes.
inline float prefix_logit(const AttentionArgs& a, const float* q, int seq, int kv_head) {
  const float* k = a.prefix_k.ptr<const float>() + static_cast<int64_t>(seq) * a.prefix_k.cols + kv_head * a.d_head;
  __m256 acc = _mm256_setzero_ps();
  for (int c = 0; c < a.d_head; c += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(k + c), acc);
  return hsum(acc) * a.scale + a.prefix_bias;
}

// o[0, d) += w * v_prefix of the sequence's kv head (before the row is divided by its sum).
inline void add_prefix_value(const AttentionArgs& a, float* o, int seq, int kv_head, int c0, int n, float w) {
  const float* v = a.prefix_v.ptr<const float>() + static_cast<int64_t>(seq) * a.prefix_v.cols + kv_head * a.d_head + c0;
  const __m256 vw = _mm256_set1_ps(w);
  for (int c = 0; c < n; c += 8) _mm256_storeu_ps(o + c, _mm256_fmadd_ps(vw, _mm256_loadu_ps(v + c), _mm256_loadu_ps(o + c)));
}

// One tile of mr queries [i0, i0 + mr) of head h. kt holds the keys [kbase, kbase + ld) of the
// task transposed (column c is key kbase + c); only the columns some query of the tile can see
// are multiplied, so a sliding window costs its width, not the sequence length.
template <class Tile>
void attend_tile(const AttentionArgs& a, const Task& t, int h, int i0, int mr, const float* kt, int ld, int kbase, float* scores,
                 const BiasRow* bias) {
  const int d = a.d_head;
  const SeqRows sr = seq_rows(a, t.seq);
  const int begin = sr.q_begin;
  int lo[kMR], hi[kMR], kmin = sr.kv_len, kmax = 0;
  for (int r = 0; r < mr; r++) {
    visible_range(a, sr.offset + i0 + r, sr.kv_len, &lo[r], &hi[r]);
    lo[r] -= kbase;
    hi[r] -= kbase;
    kmin = std::min(kmin, lo[r]);
    kmax = std::max(kmax, hi[r]);
  }
  const int j_begin = kmin / Tile::kNR * Tile::kNR;  // tiles stay on the padded column grid
  const int width = kmax - j_begin;
  // S[mr][j_begin, kmax) = Q[mr][d] . kT[d][j_begin, kmax)
  const float* q = a.q.ptr<const float>() + static_cast<int64_t>(begin + i0) * a.q.cols + h * d;
  for (int r = 0; r < mr; r++) std::memset(scores + r * ld + j_begin, 0, sizeof(float) * static_cast<size_t>(ld - j_begin));
  for (int j0 = j_begin; j0 < kmax; j0 += Tile::kNR)
    Tile::run(mr, d, q, a.q.cols, kt + j0, ld, scores + j0, ld, std::min(Tile::kNR, kmax - j0));
  const bool has_prefix = !a.prefix_k.empty();
  float inv[kMR], prefix[kMR];
  for (int r = 0; r < mr; r++) {
    if (has_prefix) prefix[r] = prefix_logit(a, q + r * a.q.cols, t.seq, t.kv_head);
    inv[r] = 1.0f / softmax_row(scores + r * ld + j_begin, width, lo[r] - j_begin, hi[r] - j_begin, a.scale, has_prefix ? &prefix[r] : nullptr,
                                bias ? bias->from(kbase + j_begin, sr.offset + i0 + r) : nullptr);
  }
  // O[mr][d] = P[mr][j_begin, kmax) . V[j_begin, kmax)[d], then each row scaled by 1 / its softmax sum.
  float* o = a.out.ptr<float>() + static_cast<int64_t>(begin + i0) * a.out.cols + h * d;
  const float* v = a.v.ptr<const float>() + static_cast<int64_t>(sr.kv_begin + kbase + j_begin) * a.v.cols + t.kv_head * d;
  for (int r = 0; r < mr; r++) std::memset(o + r * a.out.cols, 0, sizeof(float) * d);
  for (int c0 = 0; c0 < d; c0 += Tile::kNR)
    Tile::run(mr, width, scores + j_begin, ld, v + c0, a.v.cols, o + c0, a.out.cols, std::min(Tile::kNR, d - c0));
  if (has_prefix)
    for (int r = 0; r < mr; r++) add_prefix_value(a, o + r * a.out.cols, t.seq, t.kv_head, 0, d, prefix[r]);
  for (int r = 0; r < mr; r++) {
    const __m256 iv = _mm256_set1_ps(inv[r]);
    for (int c = 0; c < d; c += 8) _mm256_storeu_ps(o + r * a.out.cols + c, _mm256_mul_ps(_mm256_loadu_ps(o + r * a.out.cols + c), iv));
  }
}

template <class Tile>
void attention(const AttentionArgs& a, ThreadPool& pool) {
  const int group = a.n_heads / a.n_kv_heads;
  const int d = a.d_head;
  // The tiles read 16 values of a head at a time; other head sizes (none in the supported
  // models: 16, 32, 64, 128, 256) take the scalar reference.
  if (d % 16 != 0) return ref::attention(a);
  const std::vector<Task> tasks = plan_tasks(a, pool.size());
  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& t = tasks[static_cast<size_t>(ti)];
    const SeqRows sr = seq_rows(a, t.seq);
    // Keys any query of the block can see: [kbegin, kend) (each query's own range is applied in
    // attend_tile). Only those are transposed.
    int kbegin, kend;
    task_keys(a, sr, t.q0, t.q1, &kbegin, &kend);
    const int ld = (kend - kbegin + Tile::kNR - 1) / Tile::kNR * Tile::kNR;  // padded: tiles never leave the rows
    thread_local std::vector<float> kt, scores;
    kt.assign(static_cast<size_t>(d) * ld, 0.0f);
    scores.resize(static_cast<size_t>(kMR) * ld);
    for (int j = kbegin; j < kend; j++) {
      const float* k = a.k.ptr<const float>() + static_cast<int64_t>(sr.kv_begin + j) * a.k.cols + t.kv_head * d;
      for (int c = 0; c < d; c++) kt[static_cast<size_t>(c) * ld + (j - kbegin)] = k[c];
    }
    thread_local BiasRow bias;
    for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; h++) {
      // Every key offset j - i the block meets: from (first key, last query) to (last padded
      // key column, first query).
      if (a.position_bias()) bias.fill(a, h, kbegin - (sr.offset + t.q1 - 1), kbegin + ld - 1 - (sr.offset + t.q0));
      for (int i0 = t.q0; i0 < t.q1; i0 += kMR)
        attend_tile<Tile>(a, t, h, i0, std::min(kMR, t.q1 - i0), kt.data(), ld, kbegin, scores.data(),
                          a.position_bias() ? &bias : nullptr);
    }
  });
}

}  // namespace
}  // namespace embed::cpu::attention_detail

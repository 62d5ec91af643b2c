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

// Visible keys [lo, hi) of query i in a sequence of `len` tokens.
inline void visible_range(const AttentionArgs& a, int i, int len, int* lo, int* hi) {
  *lo = 0;
  *hi = a.causal ? i + 1 : len;
  if (a.window_left >= 0) *lo = std::max(*lo, i - a.window_left);
  if (a.window_right >= 0) *hi = std::min(*hi, i + a.window_right + 1);
}

// p[0, n) = exp(scale * s - max) over [lo, hi), 0 elsewhere; returns the sum (8 lanes, then scalar).
// `prefix` (KV-Embedding, optional): in, the prefix position's logit (scaled, biased); out, its
// weight exp(logit - max), included in the sum and the max.
float softmax_row(float* s, int n, int lo, int hi, float scale, float* prefix = nullptr) {
  const __m256 vs = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int m = lo;
  for (; m + 8 <= hi; m += 8) vmax = _mm256_max_ps(vmax, _mm256_mul_ps(_mm256_loadu_ps(s + m), vs));
  float mx = hmax(vmax);
  for (; m < hi; m++) mx = std::max(mx, s[m] * scale);
  if (prefix) mx = std::max(mx, *prefix);
  std::fill(s, s + lo, 0.0f);
  std::fill(s + hi, s + n, 0.0f);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  int j = lo;
  for (; j + 8 <= hi; j += 8) {
    const __m256 e = exp_ps(_mm256_fmsub_ps(_mm256_loadu_ps(s + j), vs, vm));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  if (j < hi) {  // tail through the same vector exp
    const __m256i mask = tail_mask(hi - j);
    const __m256 e = exp_ps(_mm256_fmsub_ps(_mm256_maskload_ps(s + j, mask), vs, vm));
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
void attend_tile(const AttentionArgs& a, const Task& t, int h, int i0, int mr, const float* kt, int ld, int kbase, float* scores) {
  const int d = a.d_head;
  const int begin = a.cu_seqlens_host[t.seq], len = a.cu_seqlens_host[t.seq + 1] - begin;
  int lo[kMR], hi[kMR], kmin = len, kmax = 0;
  for (int r = 0; r < mr; r++) {
    visible_range(a, i0 + r, len, &lo[r], &hi[r]);
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
    inv[r] = 1.0f / softmax_row(scores + r * ld + j_begin, width, lo[r] - j_begin, hi[r] - j_begin, a.scale, has_prefix ? &prefix[r] : nullptr);
  }
  // O[mr][d] = P[mr][j_begin, kmax) . V[j_begin, kmax)[d], then each row scaled by 1 / its softmax sum.
  float* o = a.out.ptr<float>() + static_cast<int64_t>(begin + i0) * a.out.cols + h * d;
  const float* v = a.v.ptr<const float>() + static_cast<int64_t>(begin + kbase + j_begin) * a.v.cols + t.kv_head * d;
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
  // Whole sequences per task (the keys are transposed once per sequence and kv head) unless
  // there are too few (sequence, kv head) pairs to keep the threads busy.
  const bool split = static_cast<int64_t>(a.n_seqs) * a.n_kv_heads < 4 * pool.size();
  std::vector<Task> tasks;
  for (int s = 0; s < a.n_seqs; s++) {
    const int len = a.cu_seqlens_host[s + 1] - a.cu_seqlens_host[s];
    const int block = split ? kQueryBlock : len;
    for (int kvh = 0; kvh < a.n_kv_heads; kvh++)
      for (int q0 = 0; q0 < len; q0 += block) tasks.push_back({s, kvh, q0, std::min(len, q0 + block)});
  }
  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& t = tasks[static_cast<size_t>(ti)];
    const int begin = a.cu_seqlens_host[t.seq];
    const int len = a.cu_seqlens_host[t.seq + 1] - begin;
    // Keys any query of the block can see: [kbegin, kend) (each query's own range is applied in
    // attend_tile). Only those are transposed.
    int kbegin = 0, kend = a.causal ? t.q1 : len;
    if (a.window_left >= 0) kbegin = std::max(0, t.q0 - a.window_left);
    if (a.window_right >= 0) kend = std::min(kend, t.q1 + a.window_right);
    const int ld = (kend - kbegin + Tile::kNR - 1) / Tile::kNR * Tile::kNR;  // padded: tiles never leave the rows
    thread_local std::vector<float> kt, scores;
    kt.assign(static_cast<size_t>(d) * ld, 0.0f);
    scores.resize(static_cast<size_t>(kMR) * ld);
    for (int j = kbegin; j < kend; j++) {
      const float* k = a.k.ptr<const float>() + static_cast<int64_t>(begin + j) * a.k.cols + t.kv_head * d;
      for (int c = 0; c < d; c++) kt[static_cast<size_t>(c) * ld + (j - kbegin)] = k[c];
    }
    for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; h++)
      for (int i0 = t.q0; i0 < t.q1; i0 += kMR)
        attend_tile<Tile>(a, t, h, i0, std::min(kMR, t.q1 - i0), kt.data(), ld, kbegin, scores.data());
  });
}

}  // namespace
}  // namespace embed::cpu::attention_detail

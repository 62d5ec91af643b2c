// Attention at compute type bf16 without AMX (AVX512-BF16's vdpbf16ps): S = Q . K^T and O = P . V
// as bf16 products with f32 sums, the softmax in f32 (16 lanes; exp_ps gives the f32 attention's
// lane values, the sum is in another order). Blocked like the other levels: per tile of kRows queries a score buffer
// of kRows x (the keys the tile can see), never a full score matrix, so memory is linear in the
// sequence length.
//
// One task = (sequence, kv head[, block of 32 queries]) as on the other levels; its keys and values
// are rounded to bf16 once (round to nearest even, denormals flushed) into pair panels that serve
// every query head of the group: K as [d/2][keys] units holding (k[j][2p], k[j][2p+1]), V as
// [keys/2][d] units holding (v[2m][c], v[2m+1][c]). A query tile rounds its Q rows to bf16 pairs;
// its probabilities P (exp(logit - max), before division by the sum) are rounded to bf16 pairs.
//
// Order of the sums, which ref::attention_bf16_pairs reproduces: a score is one chain from 0 over
// the head's pairs in order (each vdpbf16ps adds the odd element's product, then the even one's);
// an output value is one chain from 0 over the key pairs (2m, 2m + 1) of the sequence's keys
// (pairs on the even grid of the sequence's key positions, whatever the task's first query; the
// softmax sum's 16 lanes likewise, so a query's result depends only on its own sequence), keys a query cannot see having p = 0; the
// KV-Embedding prefix's value is added in f32 and the row is multiplied by 1 / its softmax sum.
//
// Not covered here, and sent to the f32 attention (avx512::attention) rather than refused: head
// sizes that are not a multiple of 32 (the tiles read 32 head values at a time; none of the
// supported bf16-sized models) and a position bias (T5/MPNet buckets, ALiBi), as the AMX bf16
// attention does.
#include <algorithm>
#include <vector>

#include "cpu/attention_impl.h"
#include "cpu/simd_avx512.h"

namespace embed::cpu::avx512 {
namespace {

using attention_detail::add_prefix_value;
using attention_detail::prefix_logit;
using attention_detail::SeqRows;
using attention_detail::Task;
using attention_detail::visible_range;

constexpr int kRows = 8;   // queries per tile
constexpr int kKeys = 32;  // keys per score block (two 16-wide vectors)

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }
inline __mmask16 lanes(int n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

// 32 floats (n valid, the rest zero) -> 16 bf16 pairs (x[2m] in the low half of unit m).
inline __m512i round_pairs(const float* x, int n) {
  const __m512 lo = _mm512_maskz_loadu_ps(lanes(n), x);
  const __m512 hi = _mm512_maskz_loadu_ps(lanes(n - 16), x + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// Lanes t of the 16 from key j0 with lo <= j0 + t < hi.
inline __mmask16 range_lanes(int j0, int lo, int hi) {
  return static_cast<__mmask16>(lanes(std::clamp(hi - j0, 0, 16)) & ~lanes(std::clamp(lo - j0, 0, 16)));
}

// The f32 softmax of one row of scores row[0, width) (width a multiple of 32) over its visible
// keys [lo, hi), 16 lanes at a time: p = exp(scale * s - max) (exp_ps, the same lane values as the
// f32 attention's softmax_row), 0 outside [lo, hi), written rounded to bf16 pairs into
// prow[0, width / 2); returns the sum of the unrounded p. `prefix` as in softmax_row.
float softmax_pairs(const float* row, int width, int lo, int hi, float scale, float* prefix, uint32_t* prow) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int j = lo / 16 * 16; j < hi; j += 16)
    vmax = _mm512_mask_max_ps(vmax, range_lanes(j, lo, hi), vmax, _mm512_mul_ps(_mm512_loadu_ps(row + j), vs));
  float mx = _mm512_reduce_max_ps(vmax);
  if (prefix) mx = std::max(mx, *prefix);
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 acc = _mm512_setzero_ps();
  for (int j = 0; j < width; j += 32) {
    const __mmask16 m0 = range_lanes(j, lo, hi), m1 = range_lanes(j + 16, lo, hi);
    if ((m0 | m1) == 0) {
      _mm512_storeu_si512(prow + j / 2, _mm512_setzero_si512());
      continue;
    }
    const __m512 e0 = _mm512_maskz_mov_ps(m0, exp_ps(_mm512_fmsub_ps(_mm512_loadu_ps(row + j), vs, vm)));
    const __m512 e1 = _mm512_maskz_mov_ps(m1, exp_ps(_mm512_fmsub_ps(_mm512_loadu_ps(row + j + 16), vs, vm)));
    acc = _mm512_add_ps(acc, _mm512_add_ps(e0, e1));
    _mm512_storeu_si512(prow + j / 2, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(e1, e0)));
  }
  float sum = _mm512_reduce_add_ps(acc);
  if (prefix) {
    *prefix = std::exp(*prefix - mx);
    sum += *prefix;
  }
  return sum;
}

struct Scratch {
  std::vector<uint32_t> kp, vp;  // K pairs [d/2][ld], V pairs [ld/2][d]
  std::vector<uint32_t> qp;      // Q pairs of one tile [kRows][d/2]
  std::vector<uint32_t> pp;      // P pairs of one tile [kRows][ld/2]
  std::vector<float> scores;     // [kRows][ld]
};

class Bf16Attention {
 public:
  Bf16Attention(const AttentionArgs& a, const Task& t, Scratch& s)
      : a_(a), t_(t), s_(s), d_(a.d_head), r_(attention_detail::seq_rows(a, t.seq)) {
    attention_detail::task_keys(a, r_, t.q0, t.q1, &kbegin_, &kend_);
    // Key blocks on the sequence's grid of 32 key positions, whatever the task's first query: the
    // key pairs and the softmax sum's lanes then fall on the same keys in every batch.
    kbegin_ = kbegin_ / kKeys * kKeys;
    n_keys_ = kend_ - kbegin_;
    ld_ = (n_keys_ + kKeys - 1) / kKeys * kKeys;
    pack_keys();
    pack_values();
    s_.scores.resize(static_cast<size_t>(kRows) * ld_);
    s_.qp.resize(static_cast<size_t>(kRows) * (d_ / 2));
    s_.pp.resize(static_cast<size_t>(kRows) * (ld_ / 2));
  }

  void run() {
    const int group = a_.n_heads / a_.n_kv_heads;
    for (int h = t_.kv_head * group; h < (t_.kv_head + 1) * group; h++)
      for (int i0 = t_.q0; i0 < t_.q1; i0 += kRows) query_tile(h, i0, std::min(kRows, t_.q1 - i0));
  }

 private:
  // kp[p * ld + j] = (k[j][2p], k[j][2p + 1]) for keys j of the task (zero past n_keys): each
  // key's row rounded to 16 pairs at a time and scattered down its column.
  void pack_keys() {
    s_.kp.assign(static_cast<size_t>(d_ / 2) * ld_, 0u);
    const float* k = a_.k.ptr<const float>() + static_cast<int64_t>(r_.kv_begin + kbegin_) * a_.k.cols + t_.kv_head * d_;
    const __m512i column = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(ld_));
    for (int j = 0; j < n_keys_; j++)
      for (int c = 0; c < d_; c += 32)
        _mm512_i32scatter_epi32(s_.kp.data() + static_cast<size_t>(c / 2) * ld_ + j, column,
                                round_pairs(k + static_cast<int64_t>(j) * a_.k.cols + c, 32), 4);
  }

  // vp[m * d + c] = (v[2m][c], v[2m + 1][c]) for key pairs m of the task (zero past n_keys).
  void pack_values() {
    s_.vp.assign(static_cast<size_t>(ld_ / 2) * d_, 0u);
    const float* v = a_.v.ptr<const float>() + static_cast<int64_t>(r_.kv_begin + kbegin_) * a_.v.cols + t_.kv_head * d_;
    for (int m = 0; 2 * m < n_keys_; m++)
      for (int c = 0; c < d_; c += 16) {
        const __m512 v0 = _mm512_loadu_ps(v + static_cast<int64_t>(2 * m) * a_.v.cols + c);
        const __m512 v1 = 2 * m + 1 < n_keys_ ? _mm512_loadu_ps(v + static_cast<int64_t>(2 * m + 1) * a_.v.cols + c) : _mm512_setzero_ps();
        const __m512i units = _mm512_or_si512(_mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v0))),
                                              _mm512_slli_epi32(_mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v1))), 16));
        _mm512_storeu_si512(&s_.vp[static_cast<size_t>(m) * d_ + c], units);
      }
  }

  // scores[r][j0, j0 + 32) = Q[r] . K[j0, j0 + 32) for the tile's kRows rows.
  void score_block(int j0) {
    __m512 acc[kRows][2];
    for (int r = 0; r < kRows; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const int pairs = d_ / 2;
    for (int p = 0; p < pairs; p++) {
      const __m512i b0 = _mm512_loadu_si512(&s_.kp[static_cast<size_t>(p) * ld_ + j0]);
      const __m512i b1 = _mm512_loadu_si512(&s_.kp[static_cast<size_t>(p) * ld_ + j0 + 16]);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; r++) {
        const __m512i q = _mm512_set1_epi32(static_cast<int>(s_.qp[static_cast<size_t>(r) * pairs + p]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], as_bh(q), as_bh(b0));
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], as_bh(q), as_bh(b1));
      }
    }
    for (int r = 0; r < kRows; r++) {
      _mm512_storeu_ps(&s_.scores[static_cast<size_t>(r) * ld_ + j0], acc[r][0]);
      _mm512_storeu_ps(&s_.scores[static_cast<size_t>(r) * ld_ + j0 + 16], acc[r][1]);
    }
  }

  // o[r][c0, c0 + 32) = sum over key pairs [m0, m1) of P[r] . V for the tile's rows (unscaled).
  void output_block(int c0, int m0, int m1, __m512 (&acc)[kRows][2]) {
    for (int r = 0; r < kRows; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const int ldp = ld_ / 2;
    for (int m = m0; m < m1; m++) {
      const __m512i b0 = _mm512_loadu_si512(&s_.vp[static_cast<size_t>(m) * d_ + c0]);
      const __m512i b1 = _mm512_loadu_si512(&s_.vp[static_cast<size_t>(m) * d_ + c0 + 16]);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; r++) {
        const __m512i p = _mm512_set1_epi32(static_cast<int>(s_.pp[static_cast<size_t>(r) * ldp + m]));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], as_bh(p), as_bh(b0));
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], as_bh(p), as_bh(b1));
      }
    }
  }

  void query_tile(int h, int i0, int rows) {
    int lo[kRows], hi[kRows], kmin = n_keys_, kmax = 0;
    for (int r = 0; r < rows; r++) {
      visible_range(a_, r_.offset + i0 + r, r_.kv_len, &lo[r], &hi[r]);
      lo[r] -= kbegin_;
      hi[r] -= kbegin_;
      kmin = std::min(kmin, lo[r]);
      kmax = std::max(kmax, hi[r]);
    }
    // Q rows as bf16 pairs; rows past `rows` zero.
    const int pairs = d_ / 2;
    const float* q = a_.q.ptr<const float>() + static_cast<int64_t>(r_.q_begin + i0) * a_.q.cols + h * d_;
    for (int r = 0; r < kRows; r++)
      for (int c = 0; c < d_; c += 32)
        _mm512_storeu_si512(&s_.qp[static_cast<size_t>(r) * pairs + c / 2],
                            r < rows ? round_pairs(q + static_cast<int64_t>(r) * a_.q.cols + c, 32) : _mm512_setzero_si512());
    const int j_begin = kmin / kKeys * kKeys, j_end = (kmax + kKeys - 1) / kKeys * kKeys;
    for (int j0 = j_begin; j0 < j_end; j0 += kKeys) score_block(j0);
    const bool has_prefix = !a_.prefix_k.empty();
    float inv[kRows] = {}, prefix[kRows] = {};
    const int width = j_end - j_begin, ldp = ld_ / 2;
    for (int r = 0; r < kRows; r++) {
      float* row = &s_.scores[static_cast<size_t>(r) * ld_ + j_begin];
      uint32_t* prow = &s_.pp[static_cast<size_t>(r) * ldp + j_begin / 2];
      if (r >= rows) {
        std::fill(prow, prow + width / 2, 0u);
        continue;
      }
      // The prefix logit in f32 from the query's f32 values, as on the AMX path.
      if (has_prefix) prefix[r] = prefix_logit(a_, q + static_cast<int64_t>(r) * a_.q.cols, t_.seq, t_.kv_head);
      inv[r] = 1.0f / softmax_pairs(row, width, lo[r] - j_begin, hi[r] - j_begin, a_.scale, has_prefix ? &prefix[r] : nullptr, prow);
    }
    float* o = a_.out.ptr<float>() + static_cast<int64_t>(r_.q_begin + i0) * a_.out.cols + h * d_;
    for (int c0 = 0; c0 < d_; c0 += 32) {
      __m512 acc[kRows][2];
      output_block(c0, j_begin / 2, j_end / 2, acc);
      for (int r = 0; r < rows; r++) {
        alignas(64) float buf[32];
        _mm512_store_ps(buf, acc[r][0]);
        _mm512_store_ps(buf + 16, acc[r][1]);
        if (has_prefix) add_prefix_value(a_, buf, t_.seq, t_.kv_head, c0, 32, prefix[r]);
        const __m512 iv = _mm512_set1_ps(inv[r]);
        float* dst = o + static_cast<int64_t>(r) * a_.out.cols + c0;
        _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_load_ps(buf), iv));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(_mm512_load_ps(buf + 16), iv));
      }
    }
  }

  const AttentionArgs& a_;
  const Task& t_;
  Scratch& s_;
  const int d_;
  const SeqRows r_;
  int kbegin_ = 0, kend_ = 0, n_keys_ = 0, ld_ = 0;
};

}  // namespace

void attention_bf16(const AttentionArgs& a, ThreadPool& pool) {
  if (a.d_head % 32 != 0 || a.position_bias()) return attention(a, pool);  // the f32 attention (see the top)
  const std::vector<Task> tasks = attention_detail::plan_tasks(a, pool.size());  // as on the other levels
  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    thread_local Scratch scratch;
    Bf16Attention(a, tasks[static_cast<size_t>(ti)], scratch).run();
  });
}

}  // namespace embed::cpu::avx512

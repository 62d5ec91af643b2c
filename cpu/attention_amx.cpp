// Attention over packed sequences on the AMX tiles: per tile of 16 queries, S = Q . K^T as tile
// products, the exact softmax of attention_impl.h per query over its visible range, then O = P . V
// as tile products, each row scaled by 1 / its softmax sum. Compute type F32 splits Q, K, P and V
// into bf16 hi/lo parts and accumulates hi*hi' + lo*hi' + hi*lo' (amx_tile.h: f32-grade);
// BF16 rounds them and takes one product.
//
// One task = (sequence, kv head[, block of 32 queries]) as on the other levels: its keys and
// values are packed once into tiles (K^T: 16 keys x 32 head values per tile; V: 32 keys x 16
// values, key pairs interleaved) and serve every query head of the group. A query's result depends
// only on its own sequence (batch invariant): products over keys it cannot see multiply a zero
// probability, which adds nothing. Head sizes that are not a multiple of 32 use the AVX-512 kernel.
#include <algorithm>
#include <vector>

#include "cpu/amx_tile.h"
#include "cpu/attention_impl.h"

namespace embed::cpu::amx {
namespace {

using attention_detail::SeqRows;
using attention_detail::add_prefix_value;
using attention_detail::prefix_logit;
using attention_detail::softmax_row;
using attention_detail::Task;
using attention_detail::visible_range;

// Two key tiles of S (32 keys) per pass; V tiles cover 32 keys too.
constexpr int kKeyBlock = 32;

inline __mmask16 lanes(int n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

// 16 floats -> bf16 hi parts (and lo parts), as 16 zero-extended 32-bit lanes.
inline void split16(__m512 x, __m512i& hi, __m512i& lo) {
  const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
  hi = _mm512_cvtepu16_epi32(h);
  lo = _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_sub_ps(x, bf16_lo_half_to_f32(hi)))));
}

struct Scratch {
  TileBuffer kt, vt, qt, pt;  // K^T tiles, V tiles, one query tile's Q tiles, its P tiles
  std::vector<float> scores;  // [16][ld]
  alignas(64) float obuf[kTileRows * 32];
};

template <int Parts>
class TileAttention {
 public:
  TileAttention(const AttentionArgs& a, const Task& t, Scratch& s)
      : a_(a), t_(t), s_(s), d_(a.d_head), d_blocks_(a.d_head / 32), r_(attention_detail::seq_rows(a, t.seq)) {
    // Key blocks start at multiples of 32 in the sequence's keys, whatever the task's first query,
    // so a query's products are grouped the same way in every batch; keys before the window get
    // p = 0. (With kv_rows, keys of earlier positions, the caller keeps row 0 of a sequence's keys
    // at a multiple of 32 positions for results equal to one pass.)
    attention_detail::task_keys(a, r_, t.q0, t.q1, &kbegin_, &kend_);
    kbegin_ = kbegin_ / kKeyBlock * kKeyBlock;
    n_keys_ = kend_ - kbegin_;
    key_blocks_ = (n_keys_ + kKeyBlock - 1) / kKeyBlock;
    ld_ = key_blocks_ * kKeyBlock;
    pack_keys();
    pack_values();
    s_.scores.resize(static_cast<size_t>(kTileRows) * ld_);
  }

  void run() {
    configure_tiles();
    const int group = a_.n_heads / a_.n_kv_heads;
    for (int h = t_.kv_head * group; h < (t_.kv_head + 1) * group; h++)
      for (int i0 = t_.q0; i0 < t_.q1; i0 += kTileRows) query_tile(h, i0, std::min(kTileRows, t_.q1 - i0));
  }

 private:
  const uint16_t* kt(int jt, int db, int part) const { return s_.kt.data() + ((jt * d_blocks_ + db) * Parts + part) * kTileElems; }
  const uint16_t* vt(int kb, int dc, int part) const {
    return s_.vt.data() + ((kb * (d_ / 16) + dc) * Parts + part) * kTileElems;
  }
  const uint16_t* qt(int db, int part) const { return s_.qt.data() + (db * Parts + part) * kTileElems; }
  const uint16_t* pt(int kb, int part) const { return s_.pt.data() + (kb * Parts + part) * kTileElems; }

  // K^T tiles: tile (jt, db) holds keys kbegin + 16 jt .. (columns) by head values 32 db .. in pairs.
  void pack_keys() {
    const int key_tiles = key_blocks_ * 2;
    s_.kt.resize(static_cast<size_t>(key_tiles * d_blocks_ * Parts * kTileElems));
    const float* k = a_.k.ptr<const float>() + static_cast<int64_t>(r_.kv_begin + kbegin_) * a_.k.cols + t_.kv_head * d_;
    for (int jt = 0; jt < key_tiles; jt++) {
      const int valid = std::clamp(n_keys_ - jt * kTileRows, 0, kTileRows);
      for (int db = 0; db < d_blocks_; db++) {
        uint16_t* dst = s_.kt.data() + ((jt * d_blocks_ + db) * Parts) * kTileElems;
        pack_b_tile(k + static_cast<int64_t>(jt) * kTileRows * a_.k.cols + db * 32, a_.k.cols, valid, dst,
                    Parts == 2 ? dst + kTileElems : nullptr);
      }
    }
  }

  // V tiles: tile (kb, dc) row r holds keys kbegin + 32 kb + 2r and + 1, interleaved, for head
  // values 16 dc .. 16 dc + 15; keys past the end are zero.
  void pack_values() {
    const int d_tiles = d_ / 16;
    s_.vt.resize(static_cast<size_t>(key_blocks_ * d_tiles * Parts * kTileElems));
    const float* v = a_.v.ptr<const float>() + static_cast<int64_t>(r_.kv_begin + kbegin_) * a_.v.cols + t_.kv_head * d_;
    for (int kb = 0; kb < key_blocks_; kb++)
      for (int dc = 0; dc < d_tiles; dc++) {
        uint16_t* dst = s_.vt.data() + ((kb * d_tiles + dc) * Parts) * kTileElems;
        for (int r = 0; r < kTileRows; r++) {
          const int key0 = kb * kKeyBlock + 2 * r;
          const __m512 v0 = key0 < n_keys_ ? _mm512_loadu_ps(v + static_cast<int64_t>(key0) * a_.v.cols + dc * 16) : _mm512_setzero_ps();
          const __m512 v1 =
              key0 + 1 < n_keys_ ? _mm512_loadu_ps(v + static_cast<int64_t>(key0 + 1) * a_.v.cols + dc * 16) : _mm512_setzero_ps();
          __m512i h0, l0, h1, l1;
          split16(v0, h0, l0);
          split16(v1, h1, l1);
          _mm512_store_si512(dst + r * 32, _mm512_or_si512(h0, _mm512_slli_epi32(h1, 16)));
          if (Parts == 2) _mm512_store_si512(dst + kTileElems + r * 32, _mm512_or_si512(l0, _mm512_slli_epi32(l1, 16)));
        }
      }
  }

  // Q tiles of queries [i0, i0 + rows) of head h (rows past `rows` are zero).
  void pack_queries(int h, int i0, int rows) {
    s_.qt.resize(static_cast<size_t>(d_blocks_ * Parts * kTileElems));
    const float* q = a_.q.ptr<const float>() + static_cast<int64_t>(r_.q_begin + i0) * a_.q.cols + h * d_;
    alignas(64) static const float zeros[32] = {};
    for (int db = 0; db < d_blocks_; db++) {
      uint16_t* hi = s_.qt.data() + db * Parts * kTileElems;
      for (int r = 0; r < kTileRows; r++) {
        const float* src = r < rows ? q + static_cast<int64_t>(r) * a_.q.cols + db * 32 : zeros;
        if (Parts == 2) split32(src, hi + r * 32, hi + kTileElems + r * 32);
        else round32(src, hi + r * 32);
      }
    }
  }

  // S[16][jt0 * 16, jt0 * 16 + 32) (two key tiles) into scores; C tiles 0, 1; Q 2 (hi), 3 (lo);
  // K 4, 5 (hi), 6, 7 (lo). Products per head block: hi*hi', lo*hi', hi*lo'.
  void scores_pair(int jt0) {
    _tile_zero(0);
    _tile_zero(1);
    for (int db = 0; db < d_blocks_; db++) {
      _tile_loadd(2, qt(db, 0), 64);
      _tile_loadd(4, kt(jt0, db, 0), 64);
      _tile_loadd(5, kt(jt0 + 1, db, 0), 64);
      _tile_dpbf16ps(0, 2, 4);
      _tile_dpbf16ps(1, 2, 5);
      if constexpr (Parts == 2) {
        _tile_loadd(3, qt(db, 1), 64);
        _tile_loadd(6, kt(jt0, db, 1), 64);
        _tile_loadd(7, kt(jt0 + 1, db, 1), 64);
        _tile_dpbf16ps(0, 3, 4);
        _tile_dpbf16ps(1, 3, 5);
        _tile_dpbf16ps(0, 2, 6);
        _tile_dpbf16ps(1, 2, 7);
      }
    }
    float* dst = s_.scores.data() + jt0 * kTileRows;
    _tile_stored(0, dst, ld_ * 4);
    _tile_stored(1, dst + kTileRows, ld_ * 4);
  }

  // O[16][32 dc2 .. + 32) = P . V over key blocks [kb0, kb1) into obuf; C 0, 1; P 2 (hi), 3 (lo);
  // V 4, 5 (hi), 6, 7 (lo).
  void output_pair(int dc2, int kb0, int kb1) {
    _tile_zero(0);
    _tile_zero(1);
    for (int kb = kb0; kb < kb1; kb++) {
      _tile_loadd(2, pt(kb, 0), 64);
      _tile_loadd(4, vt(kb, 2 * dc2, 0), 64);
      _tile_dpbf16ps(0, 2, 4);
      _tile_loadd(5, vt(kb, 2 * dc2 + 1, 0), 64);
      _tile_dpbf16ps(1, 2, 5);
      if constexpr (Parts == 2) {
        _tile_loadd(3, pt(kb, 1), 64);
        _tile_loadd(6, vt(kb, 2 * dc2, 1), 64);
        _tile_loadd(7, vt(kb, 2 * dc2 + 1, 1), 64);
        _tile_dpbf16ps(0, 3, 4);
        _tile_dpbf16ps(1, 3, 5);
        _tile_dpbf16ps(0, 2, 6);
        _tile_dpbf16ps(1, 2, 7);
      }
    }
    _tile_stored(0, s_.obuf, 32 * 4);
    _tile_stored(1, s_.obuf + 16, 32 * 4);
  }

  void query_tile(int h, int i0, int rows) {
    int lo[kTileRows], hi[kTileRows], kmin = n_keys_, kmax = 0;
    for (int r = 0; r < rows; r++) {
      visible_range(a_, r_.offset + i0 + r, r_.kv_len, &lo[r], &hi[r]);
      lo[r] -= kbegin_;
      hi[r] -= kbegin_;
      kmin = std::min(kmin, lo[r]);
      kmax = std::max(kmax, hi[r]);
    }
    const int kb0 = kmin / kKeyBlock, kb1 = (kmax + kKeyBlock - 1) / kKeyBlock;
    pack_queries(h, i0, rows);
    for (int kb = kb0; kb < kb1; kb++) scores_pair(2 * kb);
    // Softmax over each row's visible keys; P is 0 elsewhere in [kb0, kb1) blocks, and rows past
    // `rows` are all zero.
    const int j0 = kb0 * kKeyBlock, width = (kb1 - kb0) * kKeyBlock;
    const bool has_prefix = !a_.prefix_k.empty();
    float* o = a_.out.ptr<float>() + static_cast<int64_t>(r_.q_begin + i0) * a_.out.cols + h * d_;
    float inv[kTileRows], prefix[kTileRows];
    for (int r = 0; r < kTileRows; r++) {
      float* row = s_.scores.data() + static_cast<int64_t>(r) * ld_ + j0;
      if (r < rows) {
        // The prefix logit in f32 from the query's f32 values (the tile products round them).
        const float* q = a_.q.ptr<const float>() + static_cast<int64_t>(r_.q_begin + i0 + r) * a_.q.cols + h * d_;
        if (has_prefix) prefix[r] = prefix_logit(a_, q, t_.seq, t_.kv_head);
        inv[r] = 1.0f / softmax_row(row, width, lo[r] - j0, hi[r] - j0, a_.scale, has_prefix ? &prefix[r] : nullptr);
      } else {
        std::fill(row, row + width, 0.0f);
      }
    }
    s_.pt.resize(static_cast<size_t>(key_blocks_ * Parts * kTileElems));
    for (int kb = kb0; kb < kb1; kb++) {
      uint16_t* dst = s_.pt.data() + kb * Parts * kTileElems;
      for (int r = 0; r < kTileRows; r++) {
        const float* src = s_.scores.data() + static_cast<int64_t>(r) * ld_ + kb * kKeyBlock;
        if (Parts == 2) split32(src, dst + r * 32, dst + kTileElems + r * 32);
        else round32(src, dst + r * 32);
      }
    }
    for (int dc2 = 0; dc2 < d_ / 32; dc2++) {
      output_pair(dc2, kb0, kb1);
      for (int r = 0; r < rows; r++) {
        if (has_prefix) add_prefix_value(a_, s_.obuf + r * 32, t_.seq, t_.kv_head, dc2 * 32, 32, prefix[r]);
        const __m512 iv = _mm512_set1_ps(inv[r]);
        float* dst = o + static_cast<int64_t>(r) * a_.out.cols + dc2 * 32;
        _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_load_ps(s_.obuf + r * 32), iv));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(_mm512_load_ps(s_.obuf + r * 32 + 16), iv));
      }
    }
  }

  const AttentionArgs& a_;
  const Task& t_;
  Scratch& s_;
  const int d_, d_blocks_;
  const SeqRows r_;
  int kbegin_ = 0, kend_ = 0, n_keys_ = 0, key_blocks_ = 0, ld_ = 0;
};

template <int Parts>
void attention(const AttentionArgs& a, ThreadPool& pool) {
  // The position bias (T5/MPNet buckets, ALiBi) is added by the AVX-512 kernel's softmax.
  if (a.d_head % 32 != 0 || a.position_bias()) return avx512::attention(a, pool);
  const std::vector<Task> tasks = attention_detail::plan_tasks(a, pool.size());  // as on the other levels
  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    thread_local Scratch scratch;
    TileAttention<Parts>(a, tasks[static_cast<size_t>(ti)], scratch).run();
  });
}

}  // namespace

void attention_f32(const AttentionArgs& a, ThreadPool& pool) { attention<2>(a, pool); }
void attention_bf16(const AttentionArgs& a, ThreadPool& pool) { attention<1>(a, pool); }

}  // namespace embed::cpu::amx

// Block-quantized weights times 8-bit activations, the parts every int8 GEMM shares (AMX
// tdpbssd, AVX-512 VNNI vpdpbusd): the weights' integer form packed once at load into 16-column
// quad-row tiles, the activations quantized per row as llama.cpp quantizes them, the f32
// epilogue per block and the task split. AMX computes a tile's integer sums (the Sums parameter
// of output_tile); VNNI keeps them in registers and runs the same epilogue on them
// (cpu/matmul_int8_avx512.cpp), so both give the same bits. Include only from files compiled with -mavx512f -mavx512bw -mf16c.
//
// Weights (every block type): value = scale * q - min per group of 32 (16 for Q6_K), gguf/quants.h
// integer_row; int8 tiles of one 32-block of k in "quad" order (tile row r holds k 4r..4r+3 of 16
// output columns: the AMX B-tile layout, and one 64-byte VNNI operand per row), each group's scale
// and min per column. A Q6_K block has two scale groups: two tiles, each holding one group's 16
// values (zeros elsewhere). Activations: Q8_0 blocks of 32 for the legacy quants, Q8_K blocks of
// 256 for the K-quants (cpu/llama_cpp_rounding.h), value dx * qx, as A tiles of 16 rows x 32.
//
// Per 32-block and group the level gives the exact integer sums S = sum qx * q; the epilogue adds
// dx * (scale * S - min * sum qx) to each output's f32 accumulator (16 rows in registers), in
// k-block order, so a row's result does not depend on the other rows of the batch.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "cpu/tile_buffer.h"
#include "cpu/tile_output.h"
#include "gguf/quants.h"

namespace embed::cpu::int8 {
// Internal linkage on purpose (see simd_avx2.h): each level's file has its own copy, and its own
// Int8Weight type (a level only ever sees weights its own pack function made).
namespace {

constexpr int kBlock = 32;             // k per tile product (A: 16 rows x 32 int8)
constexpr int kInt8TileBytes = 512;    // A: 16 x 32; B: 8 quad rows x 16 columns x 4

struct Int8Weight final : PackedWeight {
  int64_t n = 0, k = 0, n_tiles = 0, k_blocks = 0;
  int groups = 1;           // scale groups per 32-block: 1, or 2 (Q6_K)
  bool has_min = false;
  bool q8_k = false;        // activations as Q8_K (K-quants) rather than Q8_0
  TileBuffer tiles;         // [n_tile][k_block][group] B tiles
  std::vector<float> scale, min;  // [n_tile][k_block][group][16]
  // VNNI only (filled by its pack function): -128 * each column's sum of the tile's integers,
  // [n_tile][k_block][group][16], the start of a column's sums over activations stored as qx + 128.
  std::vector<int32_t> neg_shift;

  size_t bytes() const override { return tiles.size() * 2 + (scale.size() + min.size() + neg_shift.size()) * 4; }
  const void* tile(int64_t nb, int64_t kb, int g) const {
    return reinterpret_cast<const int8_t*>(tiles.data()) + ((nb * k_blocks + kb) * groups + g) * kInt8TileBytes;
  }
  size_t param(int64_t nb, int64_t kb, int g) const { return static_cast<size_t>(((nb * k_blocks + kb) * groups + g) * 16); }
};

bool uses_q8_k(DType t) { return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K; }

std::unique_ptr<Int8Weight> pack_int8(const Tensor& w) {
  const gguf::TensorType gt = dtype_to_gguf(w.dtype);
  const int group = gguf::integer_group(gt);
  auto p = std::make_unique<Int8Weight>();
  p->n = w.rows;
  p->k = w.cols;
  p->n_tiles = (w.rows + kTileRows - 1) / kTileRows;
  p->k_blocks = w.cols / kBlock;  // every block type's size is a multiple of 32
  p->groups = kBlock / group;
  p->q8_k = uses_q8_k(w.dtype);
  p->tiles.assign(static_cast<size_t>(p->n_tiles * p->k_blocks * p->groups * kInt8TileBytes / 2), 0);
  p->scale.assign(static_cast<size_t>(p->n_tiles * p->k_blocks * p->groups * 16), 0.0f);
  p->min.assign(p->scale.size(), 0.0f);
  std::vector<int8_t> q(static_cast<size_t>(w.cols));
  std::vector<float> scale(static_cast<size_t>(w.cols / group)), min(scale.size());
  auto* tiles = reinterpret_cast<int8_t*>(p->tiles.data());
  for (int64_t row = 0; row < w.rows; row++) {
    gguf::integer_row(gt, static_cast<const char*>(w.data) + row * w.row_bytes(), w.cols, q.data(), scale.data(), min.data());
    const int64_t nb = row / kTileRows, c = row % kTileRows;
    for (int64_t kb = 0; kb < p->k_blocks; kb++)
      for (int g = 0; g < p->groups; g++) {
        int8_t* t = tiles + ((nb * p->k_blocks + kb) * p->groups + g) * kInt8TileBytes;
        for (int e = g * group; e < (g + 1) * group; e++) t[(e / 4) * 64 + c * 4 + e % 4] = q[kb * kBlock + e];
        const size_t at = p->param(nb, kb, g) + c;
        p->scale[at] = scale[(kb * kBlock) / group + g];
        p->min[at] = min[(kb * kBlock) / group + g];
        p->has_min |= p->min[at] != 0.0f;
      }
  }
  return p;
}

// llama_cpp_rounding.cpp's quantize_q8_0 / quantize_q8_k on 16 lanes: the same values (the kernel
// tests compare them): f32 max, the f16 round trip with F16C, products rounded half to even by
// the default MXCSR mode.
void quantize_row_q8_0(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k; b += 32) {
    const __m512 v0 = _mm512_loadu_ps(x + b), v1 = _mm512_loadu_ps(x + b + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    d[b / 32] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b + 16), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id))));
  }
}

void quantize_row_q8_k(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k; b += 256) {
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < 256; j += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + b + j)));
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      d[b / 256] = 0.0f;
      std::fill(q + b, q + b + 256, int8_t{0});
      continue;
    }
    // The first element whose magnitude is the maximum gives the sign (the scalar loop's rule).
    float max = 0.0f;
    for (int j = 0; j < 256; j += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + b + j)), _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hit) {
        max = x[b + j + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    d[b / 256] = 1.0f / iscale;
    const __m512 s = _mm512_set1_ps(iscale);
    for (int j = 0; j < 256; j += 16) {
      const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(s, _mm512_loadu_ps(x + b + j))), _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b + j), _mm512_cvtepi32_epi8(v));
    }
  }
}

// Activations quantized per row: A tiles [m_tile][k_block] (16 rows x 32 int8), and per (row,
// k-block) the scale dx and the sum of the row's 32 (or, per group, 16) integers.
struct QuantizedActivations {
  TileBuffer tiles;          // qx, or qx + 128 as unsigned bytes (offset: VNNI's unsigned operand)
  std::vector<float> dx;     // [m_pad][k_block]
  std::vector<float> qsum;   // [m_pad][k_block][groups]
  int64_t k_blocks = 0;
  int groups = 1;
  const void* tile(int64_t it, int64_t kb) const {
    return reinterpret_cast<const int8_t*>(tiles.data()) + (it * k_blocks + kb) * kInt8TileBytes;
  }
};

void quantize_activations(const Tensor& x, const Int8Weight& w, bool offset, QuantizedActivations& a, ThreadPool& pool) {
  const int64_t m = x.rows, k = x.cols, m_tiles = (m + kTileRows - 1) / kTileRows;
  a.k_blocks = w.k_blocks;
  a.groups = w.groups;
  a.tiles.resize(static_cast<size_t>(m_tiles * w.k_blocks * kInt8TileBytes / 2));
  a.dx.resize(static_cast<size_t>(m_tiles * kTileRows * w.k_blocks));
  // The sums of a row's integers per group enter only the epilogue of weights with a min.
  a.qsum.resize(w.has_min ? a.dx.size() * static_cast<size_t>(w.groups) : 0);
  auto* tiles = reinterpret_cast<int8_t*>(a.tiles.data());
  pool.parallel_for(m_tiles * kTileRows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<int8_t> q(static_cast<size_t>(k));
    std::vector<float> d(static_cast<size_t>(k / kBlock));
    for (int64_t r = r0; r < r1; r++) {
      const int64_t it = r / kTileRows, row = r % kTileRows;
      if (r < m) {
        if (w.q8_k) quantize_row_q8_k(x.ptr<const float>() + r * k, k, q.data(), d.data());
        else quantize_row_q8_0(x.ptr<const float>() + r * k, k, q.data(), d.data());
      } else {
        std::fill(q.begin(), q.end(), int8_t{0});
        std::fill(d.begin(), d.end(), 0.0f);
      }
      // qx, or qx + 128 as an unsigned byte (qx xor 0x80), 32 at a time into the row of its tile.
      const __m256i flip = _mm256_set1_epi8(offset ? static_cast<char>(0x80) : 0);
      for (int64_t kb = 0; kb < w.k_blocks; kb++) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q.data() + kb * kBlock));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(tiles + (it * w.k_blocks + kb) * kInt8TileBytes + row * kBlock),
                            _mm256_xor_si256(v, flip));
        a.dx[static_cast<size_t>(r * w.k_blocks + kb)] = w.q8_k ? d[static_cast<size_t>(kb * kBlock / 256)] : d[static_cast<size_t>(kb)];
        if (!w.has_min) continue;
        const int per = kBlock / w.groups;
        for (int g = 0; g < w.groups; g++) {
          int s = 0;
          for (int e = g * per; e < (g + 1) * per; e++) s += q[static_cast<size_t>(kb * kBlock + e)];
          a.qsum[static_cast<size_t>((r * w.k_blocks + kb) * w.groups + g)] = static_cast<float>(s);
        }
      }
    }
  });
}

// Output tile (it, jt): acc[r] (16 columns) accumulates, per k-block and group, dx * (scale * S -
// min * qsum) with S the tile's integer sums. `sums` is the level's: sums.issue(s) starts step s =
// (k-block s / groups, group s % groups) and sums.result(s) returns its 16 x 16 int32 sums (row
// major); the next step is issued before a step's sums are read, so a level may overlap them.
template <bool kMin, class Sums>
void output_tile(const QuantizedActivations& a, const Int8Weight& w, int64_t it, int64_t jt, const Output& out, Sums& sums) {
  __m512 acc[kTileRows];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  const float* dx = a.dx.data() + it * kTileRows * a.k_blocks;
  const float* qsum = kMin ? a.qsum.data() + it * kTileRows * a.k_blocks * a.groups : nullptr;  // kMin only
  const int64_t steps = w.k_blocks * w.groups;
  sums.issue(a, w, it, jt, 0);
  for (int64_t s = 0; s < steps; s++) {
    if (s + 1 < steps) sums.issue(a, w, it, jt, s + 1);
    const int64_t kb = s / w.groups;
    const int g = static_cast<int>(s % w.groups);
    const int32_t* sum = sums.result(a, w, it, jt, s);
    const __m512 scale = _mm512_loadu_ps(w.scale.data() + w.param(jt, kb, g));
    const __m512 min = kMin ? _mm512_loadu_ps(w.min.data() + w.param(jt, kb, g)) : _mm512_setzero_ps();
    for (int r = 0; r < kTileRows; r++) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(sum + r * kTileRows));
      const __m512 d = _mm512_set1_ps(dx[r * a.k_blocks + kb]);
      if constexpr (kMin) {
        const __m512 t = _mm512_fmsub_ps(scale, v, _mm512_mul_ps(min, _mm512_set1_ps(qsum[(r * a.k_blocks + kb) * a.groups + g])));
        acc[r] = _mm512_fmadd_ps(t, d, acc[r]);
      } else {
        acc[r] = _mm512_fmadd_ps(v, _mm512_mul_ps(scale, d), acc[r]);
      }
    }
  }
  alignas(64) float c[kTileRows * kTileRows];
  for (int r = 0; r < kTileRows; r++) _mm512_store_ps(c + r * kTileRows, acc[r]);
  out.store(c, it, jt);
}

// The GEMM: activations quantized once per call (as qx + 128 when `offset`), then tasks of up to
// 4 x 4 output tiles (fewer when there are too few tasks for the threads). Each task makes its own
// tile function (make_tile(); it may prepare the thread: the AMX tile configuration), called as
// tile(acts, w, it, jt, columns, out) for the task's output tiles, kColumnTiles (or, at the task's
// edge, fewer: `columns`) column tiles jt.. at a time.
template <int kColumnTiles = 1, class MakeTile>
void matmul_tiles(const MatmulArgs& a, const Int8Weight& w, ThreadPool& pool, bool offset, MakeTile make_tile) {
  const int64_t m = a.x.rows, n = a.w.rows;
  const int64_t m_tiles = (m + kTileRows - 1) / kTileRows, n_tiles = w.n_tiles;
  thread_local QuantizedActivations caller_acts;  // the caller's, shared with the workers by reference
  QuantizedActivations& acts = caller_acts;
  quantize_activations(a.x, w, offset, acts, pool);
  const Output out{a.y.ptr<float>(), m, n, n, a.bias.empty() ? nullptr : a.bias.ptr<const float>(), a.accumulate, a.activation};
  int64_t tm = 4, tn = 4;
  auto count = [&] { return ((m_tiles + tm - 1) / tm) * ((n_tiles + tn - 1) / tn); };
  while (count() < 4 * pool.size() && (tm > 1 || tn > 1)) (tn >= tm ? tn : tm) /= 2;
  const int64_t tasks_n = (n_tiles + tn - 1) / tn;
  pool.run(count(), [&](int64_t task) {
    auto tile = make_tile();
    const int64_t it0 = (task / tasks_n) * tm, it1 = std::min(m_tiles, it0 + tm);
    const int64_t jt0 = (task % tasks_n) * tn, jt1 = std::min(n_tiles, jt0 + tn);
    for (int64_t jt = jt0; jt < jt1; jt += kColumnTiles)
      for (int64_t it = it0; it < it1; it++) tile(acts, w, it, jt, std::min<int64_t>(kColumnTiles, jt1 - jt), out);
  });
}

// matmul_tiles with output_tile over a level's Sums (make_sums() per task), activations as qx.
template <class MakeSums>
void matmul(const MatmulArgs& a, const Int8Weight& w, ThreadPool& pool, MakeSums make_sums) {
  matmul_tiles(a, w, pool, false, [&] {
    return [sums = make_sums()](const QuantizedActivations& acts, const Int8Weight& wt, int64_t it, int64_t jt, int64_t,
                                const Output& out) mutable {
      if (wt.has_min) output_tile<true>(acts, wt, it, jt, out, sums);
      else output_tile<false>(acts, wt, it, jt, out, sums);
    };
  });
}

}  // namespace
}  // namespace embed::cpu::int8

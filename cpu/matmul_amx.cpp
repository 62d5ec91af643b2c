// GEMM y[m, n] (+)= x[m, k] . w[n, k]^T + bias on the AMX tiles (tdpbf16ps: bf16 pairs
// multiplied exactly, accumulated in f32).
//
// Compute type F32 (the default): both operands are split into bf16 parts (amx_tile.h) and each
// output accumulates hi*hi' + lo*hi' + hi*lo' per 32-deep k-block; bf16 weights have no lo part
// (two products), f16 weights split exactly. Compute type BF16: one product, hi*hi'.
//
// Layout: weights are packed once at load (TileWeight, "VNNI" order: a 16-column tile holds 16
// rows of 16 (k, k+1) pairs); quantized weights are decoded and packed the same way per call,
// per task. Activations are split per call into bf16 tiles (zero padded to 16 rows and 32 columns). The register blocking is 2 x 2 output tiles (32 x 32 floats) held in tiles 0-3 over
// the whole k loop; tiles 4-5 hold A, 6-7 B.
//
// Batch invariance: every output tile starts at zero and receives the same products in the same
// order (k-blocks ascending; per block hi*hi', lo*hi', hi*lo') whatever the blocking around it,
// then (accumulate ? y : 0) + bias + sums is stored; so a row does not depend on the other rows.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "cpu/amx_tile.h"
#include "cpu/kernels.h"
#include "cpu/tile_output.h"
#include "gguf/fp16.h"

namespace embed::cpu::amx {
namespace {

// Which products each k-block contributes.
enum class Products { One, TwoALo, Three };  // hh | hh + lh | hh + lh + hl

// Weights in tile layout: tile (nb, kb, part) is 512 bf16 values, row r = k pair (2r, 2r+1) of
// k-block kb, column c = weight row nb*16 + c; padded with zeros past n and k.
struct TileWeight final : PackedWeight {
  int64_t n = 0, k = 0, n_tiles = 0, k_blocks = 0;
  int parts = 1;  // 2: hi and lo
  TileBuffer data;

  size_t bytes() const override { return data.size() * 2; }
  const uint16_t* tile(int64_t nb, int64_t kb, int part) const {
    return data.data() + ((nb * k_blocks + kb) * parts + part) * kTileElems;
  }
};

// Decodes weight rows [r0, r0 + rows) (rows <= 16 * n_tiles) to f32 and packs them as tiles
// 0 .. n_tiles - 1 of `out` (k_blocks x parts tiles each); `buf` is scratch.
void pack_rows(const Tensor& w, int64_t r0, int64_t rows, int64_t n_tiles, int64_t k_blocks, int parts, uint16_t* out,
               std::vector<float>& buf) {
  const int64_t ld = k_blocks * kTileK;
  buf.assign(static_cast<size_t>(n_tiles * kTileRows * ld), 0.0f);
  for (int64_t r = 0; r < rows; r++)
    avx2::decode_row_segment(w.dtype, static_cast<const char*>(w.data) + (r0 + r) * w.row_bytes(), 0, w.cols, buf.data() + r * ld);
  for (int64_t nb = 0; nb < n_tiles; nb++) {
    const int valid = static_cast<int>(std::clamp<int64_t>(rows - nb * kTileRows, 0, kTileRows));
    for (int64_t kb = 0; kb < k_blocks; kb++) {
      uint16_t* t = out + (nb * k_blocks + kb) * parts * kTileElems;
      pack_b_tile(buf.data() + nb * kTileRows * ld + kb * kTileK, ld, valid, t, parts == 2 ? t + kTileElems : nullptr);
    }
  }
}

std::unique_ptr<PackedWeight> pack(const Tensor& w, int parts) {
  if (dtype_is_quantized(w.dtype)) return nullptr;  // decoded per call
  auto t = std::make_unique<TileWeight>();
  t->n = w.rows;
  t->k = w.cols;
  t->n_tiles = (w.rows + kTileRows - 1) / kTileRows;
  t->k_blocks = (w.cols + kTileK - 1) / kTileK;
  t->parts = w.dtype == DType::BF16 ? 1 : parts;  // a bf16 weight is its own hi part
  t->data.resize(static_cast<size_t>(t->n_tiles * t->k_blocks * t->parts * kTileElems));
  std::vector<float> buf;
  for (int64_t nb = 0; nb < t->n_tiles; nb++)
    pack_rows(w, nb * kTileRows, std::min<int64_t>(kTileRows, w.rows - nb * kTileRows), 1, t->k_blocks, t->parts,
              t->data.data() + nb * t->k_blocks * t->parts * kTileElems, buf);
  return t;
}

// Activations split into bf16 parts, in tiles: tile (it, kb, part) is rows it*16.. of x, columns
// kb*32.. (zero padded past m and k), 16 rows of 64 bytes, contiguous, so every tile load reads
// one kilobyte in order.
struct SplitActivations {
  TileBuffer data;
  int64_t k_blocks = 0;
  int parts = 1;
  const uint16_t* tile(int64_t it, int64_t kb, int part) const { return data.data() + ((it * k_blocks + kb) * parts + part) * kTileElems; }
};

void split_activations(const Tensor& x, int parts, int64_t k_blocks, SplitActivations& s, ThreadPool& pool) {
  const int64_t m = x.rows, k = x.cols, m_tiles = (m + kTileRows - 1) / kTileRows;
  s.k_blocks = k_blocks;
  s.parts = parts;
  s.data.resize(static_cast<size_t>(m_tiles * k_blocks * parts * kTileElems));
  const float* xp = x.ptr<const float>();
  pool.parallel_for(m_tiles * kTileRows, 16, [&](int64_t r0, int64_t r1) {
    alignas(64) float tail[kTileK];
    for (int64_t r = r0; r < r1; r++) {
      const int64_t it = r / kTileRows, row = r % kTileRows;
      for (int64_t kb = 0; kb < k_blocks; kb++) {
        uint16_t* hi = s.data.data() + ((it * k_blocks + kb) * parts) * kTileElems + row * kTileK;
        const float* src = xp + r * k + kb * kTileK;
        if (r >= m || (kb + 1) * kTileK > k) {  // padding row, or the last block of a row: zero padded
          std::fill(tail, tail + kTileK, 0.0f);
          if (r < m) std::copy(src, xp + (r + 1) * k, tail);
          src = tail;
        }
        if (parts == 2) split32(src, hi, hi + kTileElems);
        else round32(src, hi);
      }
    }
  });
}

// The partial products of one k-block, in order: (A part, B part) per phase.
template <Products P>
constexpr int kPhases = P == Products::One ? 1 : P == Products::TwoALo ? 2 : 3;
constexpr int kPhaseA[3] = {0, 1, 0};  // hi*hi', lo*hi', hi*lo'
constexpr int kPhaseB[3] = {0, 0, 1};

// Output tiles (it, jt) .. (it + MT - 1, jt + NT - 1) over all k-blocks. C tiles: 0 (row 0, col
// 0), 1 (row 0, col 1), 2 (row 1, col 0), 3 (row 1, col 1); A tiles 4, 5 (rows), B tiles 6, 7
// (cols). The tiles have no register renaming, so a load into a tile waits for the products
// reading it: each load of the next phase's operand is issued right after the last product that
// reads the register, and overlaps with the products still running.
template <int MT, int NT, Products P>
void block(const SplitActivations& a, const TileWeight& w, int64_t it, int64_t jt, const Output& out) {
  const int64_t steps = w.k_blocks * kPhases<P>;
  auto a_tile = [&](int64_t step, int row) { return a.tile(it + row, step / kPhases<P>, kPhaseA[step % kPhases<P>]); };
  auto b_tile = [&](int64_t step, int col) { return w.tile(jt + col, step / kPhases<P>, kPhaseB[step % kPhases<P>]); };
  // Whether step s + 1 needs other A (B) tiles than step s.
  auto new_a = [&](int64_t s) { return s + 1 < steps && (kPhases<P> == 1 || a_tile(s + 1, 0) != a_tile(s, 0)); };
  auto new_b = [&](int64_t s) { return s + 1 < steps && (kPhases<P> == 1 || b_tile(s + 1, 0) != b_tile(s, 0)); };

  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (MT > 1) _tile_zero(2);
  if constexpr (MT > 1 && NT > 1) _tile_zero(3);
  _tile_loadd(4, a_tile(0, 0), 64);
  if constexpr (MT > 1) _tile_loadd(5, a_tile(0, 1), 64);
  _tile_loadd(6, b_tile(0, 0), 64);
  if constexpr (NT > 1) _tile_loadd(7, b_tile(0, 1), 64);
  for (int64_t s = 0; s < steps; s++) {
    const bool na = new_a(s), nb = new_b(s);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT > 1) _tile_dpbf16ps(1, 4, 7);
    if (na) _tile_loadd(4, a_tile(s + 1, 0), 64);  // tile 4's last reader was the product above
    if constexpr (MT > 1) _tile_dpbf16ps(2, 5, 6);
    if (nb) _tile_loadd(6, b_tile(s + 1, 0), 64);
    if constexpr (MT > 1 && NT > 1) _tile_dpbf16ps(3, 5, 7);
    if constexpr (MT > 1) {
      if (na) _tile_loadd(5, a_tile(s + 1, 1), 64);
    }
    if constexpr (NT > 1) {
      if (nb) _tile_loadd(7, b_tile(s + 1, 1), 64);
    }
  }
  alignas(64) float c[4][kTileRows * kTileRows];
  _tile_stored(0, c[0], 64);
  if constexpr (NT > 1) _tile_stored(1, c[1], 64);
  if constexpr (MT > 1) _tile_stored(2, c[2], 64);
  if constexpr (MT > 1 && NT > 1) _tile_stored(3, c[3], 64);
  out.store(c[0], it, jt);
  if constexpr (NT > 1) out.store(c[1], it, jt + 1);
  if constexpr (MT > 1) out.store(c[2], it + 1, jt);
  if constexpr (MT > 1 && NT > 1) out.store(c[3], it + 1, jt + 1);
}

template <Products P>
void run_tiles(const SplitActivations& a, const TileWeight& w, int64_t it0, int64_t it1, int64_t jt0, int64_t jt1,
               const Output& out) {
  configure_tiles();
  for (int64_t jt = jt0; jt < jt1; jt += 2)
    for (int64_t it = it0; it < it1; it += 2) {
      const bool two_rows = it + 1 < it1, two_cols = jt + 1 < jt1;
      if (two_rows && two_cols) block<2, 2, P>(a, w, it, jt, out);
      else if (two_rows) block<2, 1, P>(a, w, it, jt, out);
      else if (two_cols) block<1, 2, P>(a, w, it, jt, out);
      else block<1, 1, P>(a, w, it, jt, out);
    }
}

void run_tiles(Products p, const SplitActivations& a, const TileWeight& w, int64_t it0, int64_t it1, int64_t jt0, int64_t jt1,
               const Output& out) {
  switch (p) {
    case Products::One: return run_tiles<Products::One>(a, w, it0, it1, jt0, jt1, out);
    case Products::TwoALo: return run_tiles<Products::TwoALo>(a, w, it0, it1, jt0, jt1, out);
    case Products::Three: return run_tiles<Products::Three>(a, w, it0, it1, jt0, jt1, out);
  }
}

Products products(int activation_parts, int weight_parts) {
  if (activation_parts == 1) return Products::One;
  return weight_parts == 2 ? Products::Three : Products::TwoALo;
}

void matmul(const MatmulArgs& a, ThreadPool& pool, int parts) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const int64_t k_blocks = (k + kTileK - 1) / kTileK;
  const int64_t m_tiles = (m + kTileRows - 1) / kTileRows, n_tiles = (n + kTileRows - 1) / kTileRows;
  // The calling thread's buffer, shared with the workers by reference (a thread_local named inside
  // the task would be each worker's own, empty one).
  thread_local SplitActivations caller_acts;
  SplitActivations& acts = caller_acts;
  split_activations(a.x, parts, k_blocks, acts, pool);
  const Output out{a.y.ptr<float>(), m, n, n, a.bias.empty() ? nullptr : a.bias.ptr<const float>(), a.accumulate, a.activation};

  if (a.w.packed) {
    const TileWeight& w = packed_as<TileWeight>(a.w);
    const Products p = products(parts, w.parts);
    // Tasks of up to 4 x 4 output tiles (64 x 64), smaller when there are too few for the threads.
    int64_t tm = 4, tn = 4;
    auto count = [&] { return ((m_tiles + tm - 1) / tm) * ((n_tiles + tn - 1) / tn); };
    while (count() < 4 * pool.size() && (tm > 2 || tn > 2)) (tn >= tm ? tn : tm) /= 2;
    const int64_t tasks_n = (n_tiles + tn - 1) / tn;
    pool.run(count(), [&](int64_t task) {
      const int64_t it0 = (task / tasks_n) * tm, it1 = std::min(m_tiles, it0 + tm);
      const int64_t jt0 = (task % tasks_n) * tn, jt1 = std::min(n_tiles, jt0 + tn);
      run_tiles(p, acts, w, it0, it1, jt0, jt1, out);
    });
    return;
  }

  // Quantized weights: each task decodes and packs the weight rows of its columns, then runs every
  // row of x against them.
  const int64_t per = std::clamp<int64_t>((n_tiles + 2 * pool.size() - 1) / (2 * pool.size()), 1, 8);
  const int64_t n_tasks = (n_tiles + per - 1) / per;
  pool.run(n_tasks, [&](int64_t task) {
    const int64_t jt0 = task * per, jt1 = std::min(n_tiles, jt0 + per);
    const int64_t r0 = jt0 * kTileRows, rows = std::min(n, jt1 * kTileRows) - r0;
    thread_local std::vector<float> buf;
    thread_local TileWeight w;
    w.n = rows;
    w.k = k;
    w.n_tiles = jt1 - jt0;
    w.k_blocks = k_blocks;
    w.parts = parts;
    w.data.resize(static_cast<size_t>(w.n_tiles * k_blocks * parts * kTileElems));
    pack_rows(a.w, r0, rows, w.n_tiles, k_blocks, parts, w.data.data(), buf);
    // The task's columns as an output of their own: tile column 0 is column r0.
    const Output part{out.y + r0, m, rows, n, out.bias ? out.bias + r0 : nullptr, a.accumulate, a.activation};
    run_tiles(products(parts, parts), acts, w, 0, m_tiles, 0, w.n_tiles, part);
  });
}

}  // namespace

std::unique_ptr<PackedWeight> pack_weight_f32(const Tensor& w) { return pack(w, 2); }
std::unique_ptr<PackedWeight> pack_weight_bf16(const Tensor& w) { return pack(w, 1); }

void matmul_f32(const MatmulArgs& a, ThreadPool& pool) { matmul(a, pool, 2); }
void matmul_bf16(const MatmulArgs& a, ThreadPool& pool) { matmul(a, pool, 1); }

}  // namespace embed::cpu::amx

// Compute type bf16 without AMX: y = x . w^T (+ bias, + y, then the activation) on AVX512-BF16's
// vdpbf16ps, which multiplies 16 pairs of bf16 values exactly and adds both products to 16 f32
// sums (the odd element's product first, each addition rounded to nearest even, denormal inputs
// and results flushed to zero).
//
// Operands: weights are rounded to bf16 once at load into pair panels (PairPanelWeight: 16 rows x
// one (k, k+1) pair per 64-byte vector, 2 bytes per weight); activations are rounded to bf16 once
// per call (vcvtne2ps2bf16, round to nearest even), each row's pairs then being the 32-bit units
// the kernel broadcasts. Quantized weights have no bf16 panels: they take the f32-grade AVX-512
// path (avx512::matmul, decoded per call); attention at this compute type is
// attention_bf16_avx512.cpp's (kernel_table.cpp).
//
// The micro-kernel is an 8 x 48 register tile: 24 zmm sums, three panel vectors and eight
// broadcast pairs per k pair (each vdpbf16ps does two k steps). It measured 89-93% of the
// vdpbf16ps peak on MiniLM's and bge-base's shapes where the f32 path's 12 x 32 tile (twelve
// broadcasts, twelve row pointers per step) gave 81-83%; columns come in 48s, so n = 64 or 256
// wastes part of a tile (docs/benchmarks.md). Its epilogue is the f32 tile's fused one
// (gemm_epilogue_avx512.h).
//
// Order of the sums, which ref::matmul_bf16_pairs reproduces bit for bit: per kBf16KBlock-deep
// k-block a sum starts at 0 and takes each pair in k order (odd element, then even); the blocks'
// sums are added in order to (accumulate ? y : 0) + bias; the activation follows the last block.
// A row's result depends on nothing but that row, so batches do not change it.
#include <algorithm>
#include <vector>

#include "cpu/gemm_epilogue_avx512.h"
#include "cpu/kernels.h"
#include "cpu/packed_weight.h"

namespace embed::cpu::avx512 {
namespace {

constexpr int64_t kPC = kBf16KBlock / 2;  // k pairs per k-block
constexpr int kMR = 8;                    // rows per register tile
constexpr int kNH = 3;                    // 16-wide panels per register tile
constexpr int kNR = 16 * kNH;             // columns per register tile

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// Rounds k floats to bf16 pairs: out[0, 2 * ((k + 1) / 2)), the odd tail element zero.
void round_row(const float* x, int64_t k, uint16_t* out) {
  const int64_t padded = (k + 1) / 2 * 2;
  for (int64_t c = 0; c < padded; c += 32) {
    const int64_t left = k - c;
    const __m512 lo = _mm512_maskz_loadu_ps(tile_lanes(static_cast<int>(std::min<int64_t>(left, 16))), x + c);
    const __m512 hi = _mm512_maskz_loadu_ps(tile_lanes(static_cast<int>(std::min<int64_t>(left - 16, 16))), x + c + 16);
    const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
    const int64_t n = std::min<int64_t>(32, padded - c);
    _mm512_mask_storeu_epi16(out + c, n >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << n) - 1u), v);
  }
}

// c[0..MR) x [0..n_valid) (ldc apart) gets the sums over pairs q < kq of a[r * lda + q] . b[q]
// (a: one bf16 pair per 32-bit unit; b: kNH 16-wide panels of 16 pairs each) as `e` says.
template <int MR>
void micro_kernel(int64_t kq, const uint32_t* a, int64_t lda, const uint32_t* const* b, float* c, int64_t ldc, int n_valid,
                  const Epilogue& e) {
  __m512 acc[MR][kNH];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int h = 0; h < kNH; h++) acc[r][h] = _mm512_setzero_ps();
  const uint32_t* b0 = b[0];
  const uint32_t* b1 = b[1];
  const uint32_t* b2 = b[2];
  for (int64_t q = 0; q < kq; q++) {
    const __m512bh x0 = as_bh(_mm512_load_si512(b0 + q * kPanelWidth)), x1 = as_bh(_mm512_load_si512(b1 + q * kPanelWidth)),
                   x2 = as_bh(_mm512_load_si512(b2 + q * kPanelWidth));
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      const __m512bh ar = as_bh(_mm512_set1_epi32(static_cast<int>(a[r * lda + q])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, x0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, x1);
      acc[r][2] = _mm512_dpbf16_ps(acc[r][2], ar, x2);
    }
  }
  store_tile<MR, kNH>(acc, c, ldc, n_valid, e);
}

using KernelFn = void (*)(int64_t, const uint32_t*, int64_t, const uint32_t* const*, float*, int64_t, int, const Epilogue&);
constexpr KernelFn kKernels[kMR + 1] = {nullptr,         micro_kernel<1>, micro_kernel<2>, micro_kernel<3>, micro_kernel<4>,
                                        micro_kernel<5>, micro_kernel<6>, micro_kernel<7>, micro_kernel<8>};

void run_packed(const MatmulArgs& a, const PairPanelWeight& pw, ThreadPool& pool) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows, kq = pw.k_pairs;
  // The activations as bf16 pairs, rounded once per call by all threads: the calling thread's
  // buffer, shared with the workers by reference.
  thread_local std::vector<uint16_t> caller_pairs;
  std::vector<uint16_t>& pairs_buf = caller_pairs;
  if (pairs_buf.size() < static_cast<size_t>(m * kq * 2)) pairs_buf.resize(static_cast<size_t>(m * kq * 2));
  const float* x = a.x.ptr<const float>();
  uint16_t* xp = pairs_buf.data();
  pool.parallel_for(m, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) round_row(x + r * k, k, xp + r * kq * 2);
  });
  const auto* xq = reinterpret_cast<const uint32_t*>(xp);

  const float* bias = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  float* y = a.y.ptr<float>();
  const Activation* act = a.activation ? &*a.activation : nullptr;
  // Tasks of 6 register tiles of rows (48 rows x 256 k of bf16, 24 KiB, stay in L2) by up to 2
  // tiles of columns (each tile's panels per k-block, 24 KiB, stay in L1 across the task's rows).
  constexpr int64_t kMC = 6 * kMR;
  const int64_t m_tasks = (m + kMC - 1) / kMC;
  const int64_t col_tiles = (pw.n_panels + kNH - 1) / kNH;
  int64_t per = 2;  // column tiles per task, fewer when tasks are too few to balance
  while (per > 1 && m_tasks * ((col_tiles + per - 1) / per) < 4 * pool.size()) per /= 2;
  const int64_t n_tasks_n = (col_tiles + per - 1) / per;
  pool.run(m_tasks * n_tasks_n, [&](int64_t task) {
    const int64_t i0 = (task / n_tasks_n) * kMC, i1 = std::min(m, i0 + kMC);
    const int64_t t0 = (task % n_tasks_n) * per, t1 = std::min(col_tiles, t0 + per);
    for (int64_t q0 = 0; q0 < kq; q0 += kPC) {
      const int64_t qc = std::min(kPC, kq - q0);
      for (int64_t t = t0; t < t1; t++) {
        const int64_t p = kNH * t;
        const int nv = static_cast<int>(std::min<int64_t>(kNR, n - t * kNR));
        const uint32_t* b[kNH];
        for (int h = 0; h < kNH; h++) b[h] = p + h < pw.n_panels ? pw.panel(p + h, q0) : pw.panel(p, q0);  // masked off when absent
        Epilogue e;
        e.first = q0 == 0;
        e.accumulate = a.accumulate;
        e.bias = bias ? bias + t * kNR : nullptr;
        e.act = q0 + qc >= kq ? act : nullptr;
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          kKernels[mr](qc, xq + i * kq + q0, kq, b, y + i * n + t * kNR, n, nv, e);
        }
      }
    }
  });
}

}  // namespace

std::unique_ptr<PackedWeight> pack_weight_bf16(const Tensor& w) {
  if (!panel_packable(w.dtype)) return nullptr;  // quantized: the f32-grade path decodes them per call
  auto pw = std::make_unique<PairPanelWeight>();
  pw->n = w.rows;
  pw->k = w.cols;
  pw->k_pairs = (w.cols + 1) / 2;
  pw->n_panels = (w.rows + kPanelWidth - 1) / kPanelWidth;
  auto* dst = reinterpret_cast<uint32_t*>(pw->allocate(static_cast<size_t>(pw->n_panels * pw->k_pairs) * kPanelWidth * 4));
  std::vector<float> row(static_cast<size_t>(w.cols));
  std::vector<uint32_t> pairs(static_cast<size_t>(pw->k_pairs));
  for (int64_t r = 0; r < w.rows; r++) {
    avx2::decode_row_segment(w.dtype, static_cast<const char*>(w.data) + r * w.row_bytes(), 0, w.cols, row.data());
    round_row(row.data(), w.cols, reinterpret_cast<uint16_t*>(pairs.data()));
    uint32_t* d = dst + static_cast<size_t>(r / kPanelWidth) * pw->k_pairs * kPanelWidth + r % kPanelWidth;
    for (int64_t q = 0; q < pw->k_pairs; q++) d[q * kPanelWidth] = pairs[static_cast<size_t>(q)];
  }
  return pw;
}

void matmul_bf16(const MatmulArgs& a, ThreadPool& pool) {
  if (a.w.packed) return run_packed(a, packed_as<PairPanelWeight>(a.w), pool);
  matmul(a, pool);  // quantized weights: f32-grade, decoded per call (this level's f32 GEMM)
}

}  // namespace embed::cpu::avx512

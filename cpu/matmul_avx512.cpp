// GEMM with AVX-512: y = x . w^T (+ bias, + y, then the activation), for weights packed at load
// into 16-row panels in their stored type (f32, f16 or bf16: pack_weight) and for quantized
// weights decoded per call (avx2::matmul_decoded, multiplied here by run_panels).
//
// 16-bit panels are widened to f32 exactly, where it costs least: a task of few rows (a short
// query: the GEMM reads each weight once or twice, so its time is the bytes it reads) converts
// them in registers as it loads them; a taller task widens each 256-deep block of its two panels
// once into an L1 buffer and runs the f32 kernel over it, so each conversion serves its 192 rows.
// Either way the products and their order are those of f32 panels: the same bits, at half the
// panels' memory (before, f16/bf16 were widened at load: 2x their size, and a one-row query read
// twice the bytes).
//
// The micro-kernel is a 12 x 32 register tile: 24 zmm accumulators, two 16-wide panel vectors per
// k step and one broadcast per row, so 24 FMAs per 14 loads (the 6 x 32 tile it replaced issued 12
// per 8, and spent port cycles converting 16-bit panels). The epilogue is fused
// (gemm_epilogue_avx512.h, shared with the bf16 GEMM): the first k-block starts from
// (accumulate ? y : 0) + bias in registers and the last applies MatmulArgs::activation before the
// one store, so no pass over y initialises it or activates it.
//
// Each output element is still the sum of its products in k order, one FMA chain per 256-deep
// k-block, added to the starting value block after block: the order of the AVX2 kernel
// (matmul_avx2.cpp), so the two levels give the same bits, and a row's result does not depend on
// the other rows of the batch.
#include <algorithm>

#include "cpu/gemm_epilogue_avx512.h"
#include "cpu/kernels.h"
#include "cpu/packed_weight.h"

namespace embed::cpu::avx512 {
namespace {

constexpr int64_t kKC = 256;  // k-block, as on the AVX2 path (the order of the sums depends on it)
constexpr int kMR = 12;       // rows per register tile
constexpr int kNR = 32;       // columns per register tile: two 16-wide panels

// Panel loaders: 16 weights of one k step as f32 (exact widening for the 16-bit types).
struct PanelF32 {
  using T = float;
  static __m512 load(const float* b) { return _mm512_loadu_ps(b); }
};
struct PanelF16 {
  using T = uint16_t;
  static __m512 load(const uint16_t* b) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))); }
};
struct PanelBF16 {
  using T = uint16_t;
  static __m512 load(const uint16_t* b) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))), 16));
  }
};

// c[0..MR) x [0..n_valid) (ldc apart) gets the sums over p < kc of a[r * lda + p] * b[p] (b: two
// 16-wide halves b0 and b1, rows ldb apart, elements of Panel::T) as `e` says.
template <int MR, class Panel = PanelF32>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const void* b0v, const void* b1v, int64_t ldb, float* c,
                  int64_t ldc, int n_valid, const Epilogue& e) {
  const auto* b0 = static_cast<const typename Panel::T*>(b0v);
  const auto* b1 = static_cast<const typename Panel::T*>(b1v);
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    const __m512 x0 = Panel::load(b0 + p * ldb), x1 = Panel::load(b1 + p * ldb);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      const __m512 ar = _mm512_set1_ps(a[r * lda + p]);
      acc[r][0] = _mm512_fmadd_ps(ar, x0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, x1, acc[r][1]);
    }
  }
  store_tile<MR>(acc, c, ldc, n_valid, e);
}

using KernelFn = void (*)(int64_t, const float*, int64_t, const void*, const void*, int64_t, float*, int64_t, int,
                          const Epilogue&);
template <class Panel>
constexpr KernelFn kKernelsOf[kMR + 1] = {
    nullptr,                   micro_kernel<1, Panel>,  micro_kernel<2, Panel>, micro_kernel<3, Panel>, micro_kernel<4, Panel>,
    micro_kernel<5, Panel>,    micro_kernel<6, Panel>,  micro_kernel<7, Panel>, micro_kernel<8, Panel>, micro_kernel<9, Panel>,
    micro_kernel<10, Panel>,   micro_kernel<11, Panel>, micro_kernel<12, Panel>};
constexpr const KernelFn* kKernels = kKernelsOf<PanelF32>;

void run_packed(const MatmulArgs& a, const PanelWeight& pw, ThreadPool& pool) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  const float* bias = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  float* y = a.y.ptr<float>();
  const Activation* act = a.activation ? &*a.activation : nullptr;
  const bool wide = pw.dtype == DType::F32;
  const KernelFn* convert_kernels = pw.dtype == DType::F16 ? kKernelsOf<PanelF16> : kKernelsOf<PanelBF16>;
  // Rows per task: 4 register tiles for f32 panels (an A block of 48 x 256 floats, 48 KiB, stays
  // in L2 while the task's 32-column panels, 32 KiB per k-block, stay in L1 across its row tiles);
  // 16 for 16-bit panels (192 KiB of A in L2), over which each widened panel block is reused.
  const int64_t kMC = (wide ? 4 : 16) * kMR;
  const int64_t m_tasks = (m + kMC - 1) / kMC;
  const int64_t pairs = (pw.n_panels + 1) / 2;  // 32-column tiles
  int64_t per = 2;                               // tiles per task, fewer when tasks are too few to balance
  while (per > 1 && m_tasks * ((pairs + per - 1) / per) < 4 * pool.size()) per /= 2;
  const int64_t n_tasks_n = (pairs + per - 1) / per;
  pool.run(m_tasks * n_tasks_n, [&](int64_t task) {
    const int64_t i0 = (task / n_tasks_n) * kMC, i1 = std::min(m, i0 + kMC);
    const int64_t q0 = (task % n_tasks_n) * per, q1 = std::min(pairs, q0 + per);
    // 16-bit panels: up to kWidenRows rows convert in registers (two conversions per 24 FMAs of
    // a k step cost about what widening a block costs spread over that many rows); taller tasks
    // widen each block once (32 KiB, in L1). Exact either way: the same products in the same order.
    constexpr int64_t kWidenRows = 3 * kMR;
    const bool widen = !wide && i1 - i0 >= kWidenRows;
    alignas(64) static thread_local float widened[2][kKC * kPanelWidth];
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t q = q0; q < q1; q++) {
        const int64_t p = 2 * q;
        const int nv = static_cast<int>(std::min<int64_t>(kNR, n - q * kNR));
        const void* b0 = pw.panel(p, k0);
        const void* b1 = p + 1 < pw.n_panels ? pw.panel(p + 1, k0) : b0;  // masked off when absent
        const KernelFn* kernels = wide ? kKernels : convert_kernels;
        if (widen) {
          const bool f16 = pw.dtype == DType::F16;
          for (int h = 0; h < 2; h++) {
            const auto* src = static_cast<const uint16_t*>(h == 0 ? b0 : b1);
            for (int64_t e = 0; e < kc; e++)
              _mm512_store_ps(widened[h] + e * kPanelWidth, f16 ? PanelF16::load(src + e * kPanelWidth) : PanelBF16::load(src + e * kPanelWidth));
          }
          b0 = widened[0];
          b1 = widened[1];
          kernels = kKernels;
        }
        Epilogue e;
        e.first = k0 == 0;
        e.accumulate = a.accumulate;
        e.bias = bias ? bias + q * kNR : nullptr;
        e.act = k0 + kc >= k ? act : nullptr;
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          kernels[mr](kc, x + i * k + k0, k, b0, b1, kPanelWidth, y + i * n + q * kNR, n, nv, e);
        }
      }
    }
  });
}

}  // namespace

void run_panels(const MatmulArgs& a, int64_t k0, int64_t kc, const float* panels, int64_t panel_floats, int64_t p0, int64_t p1) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  const Epilogue add;  // matmul_decoded has set the starting value
  for (int64_t i = 0; i < m; i += kMR) {
    const int mr = static_cast<int>(std::min<int64_t>(kMR, m - i));
    for (int64_t p = p0; p < p1; p += 2) {
      const int nv = static_cast<int>(std::min<int64_t>(std::min<int64_t>(kNR, (p1 - p) * 16), n - p * 16));
      const float* b0 = panels + (p - p0) * panel_floats;
      const float* b1 = p + 1 < p1 ? b0 + panel_floats : b0;  // masked off when absent
      kKernels[mr](kc, x + i * k + k0, k, b0, b1, kPanelWidth, y + i * n + p * 16, n, nv, add);
    }
  }
}

std::unique_ptr<PackedWeight> pack_weight(const Tensor& w) {
  if (!panel_packable(w.dtype)) return nullptr;
  return std::make_unique<PanelWeight>(pack_panels(w));  // f32, f16 or bf16 as stored
}

void matmul(const MatmulArgs& a, ThreadPool& pool) {
  if (a.w.packed) return run_packed(a, packed_as<PanelWeight>(a.w), pool);
  avx2::matmul_decoded(a, pool, run_panels);
  if (a.activation) activation(ActivationArgs{a.y, a.y, *a.activation}, pool);  // this table fuses it (kernel_table.cpp)
}

}  // namespace embed::cpu::avx512

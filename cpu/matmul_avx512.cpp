// GEMM with AVX-512 for weights packed at load (f32/f16/bf16): the tiling of matmul_avx2.cpp's
// packed path with a 6 x 32 tile over two adjacent 16-row panels. Each output element is
// accumulated in the same order as on the AVX2 path, so the two ISAs agree bit for bit (and rows
// stay independent of the batch). Quantized weights are decoded per call by the AVX2 code
// (avx2::matmul_decoded) and multiplied here by run_panels.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/gemm_kernel_avx512.h"
#include "cpu/kernels.h"
#include "cpu/packed_weight.h"

namespace embed::cpu::avx512 {
namespace {

constexpr int64_t kKC = 256;  // k-block, as on the AVX2 path

template <class Load>
void run(const MatmulArgs& a, const PanelWeight& pw, ThreadPool& pool) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  constexpr int64_t kMC = 8 * kMR;
  const int64_t m_tasks = (m + kMC - 1) / kMC;
  const int64_t pairs = (pw.n_panels + 1) / 2;  // 32-column tiles
  int64_t per = 2;                               // pairs per task
  while (per > 1 && m_tasks * ((pairs + per - 1) / per) < 4 * pool.size()) per /= 2;
  const int64_t n_tasks_n = (pairs + per - 1) / per;
  pool.run(m_tasks * n_tasks_n, [&](int64_t task) {
    const int64_t i0 = (task / n_tasks_n) * kMC, i1 = std::min(m, i0 + kMC);
    const int64_t q0 = (task % n_tasks_n) * per, q1 = std::min(pairs, q0 + per);
    init_matmul_output(a, i0, i1, q0 * kNR, std::min(n, q1 * kNR));
    // 16-bit weights: a task with four or more row tiles widens each k-slice of its panels to f32
    // once and runs the f32 kernel over all its rows, instead of converting in every tile's inner
    // loop (the conversions share ports with the FMAs; measured 1.14-1.19x on MiniLM f16 batches).
    // With fewer rows (single short texts) widening measured slower, so those convert in place.
    // The conversion is exact: same results either way.
    const bool widen = !std::is_same_v<Load, LoadF32> && i1 - i0 > 3 * kMR;
    thread_local std::vector<float> wide;
    if (widen) wide.resize(static_cast<size_t>(2 * kKC * 16));
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t q = q0; q < q1; q++) {
        const int64_t p = 2 * q;
        const int nv = static_cast<int>(std::min<int64_t>(kNR, n - q * kNR));
        const void* b0 = pw.panel(p, k0);
        const void* b1 = p + 1 < pw.n_panels ? pw.panel(p + 1, k0) : b0;  // masked off when absent
        if (widen) {
          for (int64_t t = 0; t < kc; t++) {
            _mm512_storeu_ps(wide.data() + t * 16, Load::load(b0, t * 16));
            _mm512_storeu_ps(wide.data() + (kKC + t) * 16, Load::load(b1, t * 16));
          }
        }
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          if (widen)
            kKernels<LoadF32>[mr](kc, x + i * k + k0, k, wide.data(), wide.data() + kKC * 16, 16, y + i * n + q * kNR, n, nv);
          else
            kKernels<Load>[mr](kc, x + i * k + k0, k, b0, b1, 16, y + i * n + q * kNR, n, nv);
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
  for (int64_t i = 0; i < m; i += kMR) {
    const int mr = static_cast<int>(std::min<int64_t>(kMR, m - i));
    for (int64_t p = p0; p < p1; p += 2) {
      const int nv = static_cast<int>(std::min<int64_t>(std::min<int64_t>(kNR, (p1 - p) * 16), n - p * 16));
      const float* b0 = panels + (p - p0) * panel_floats;
      const float* b1 = p + 1 < p1 ? b0 + panel_floats : b0;  // masked off when absent
      kKernels<LoadF32>[mr](kc, x + i * k + k0, k, b0, b1, 16, y + i * n + p * 16, n, nv);
    }
  }
}

void matmul(const MatmulArgs& a, ThreadPool& pool) {
  if (!a.w.packed) return avx2::matmul_decoded(a, pool, run_panels);
  const auto& pw = packed_as<PanelWeight>(a.w);
  switch (pw.dtype) {
    case DType::F16: return run<LoadF16>(a, pw, pool);
    case DType::BF16: return run<LoadBF16>(a, pw, pool);
    default: return run<LoadF32>(a, pw, pool);
  }
}

}  // namespace embed::cpu::avx512

// GEMM y[m, n] (+)= x[m, k] . w[n, k]^T + bias with AVX2/FMA.
// Layout: w rows (output features) are decoded and packed into 16-wide column panels
// [kc][16] per k-block; x rows are read in place (6 rows broadcast per step); a 6x16 register
// tile accumulates in f32. Threads split the output columns, so each thread decodes only its
// own weight rows. Every output element is accumulated in the same order whatever m is, so a
// row's result does not depend on the other rows in the batch (batch invariance).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/packed_weight.h"
#include "cpu/gemm_kernel_avx2.h"

namespace embed::cpu::avx2 {
namespace {

constexpr int64_t kKC = 256;         // k-block: a multiple of every block size (32, 256)
constexpr int64_t kMaxPanels = 16;   // panels packed at once per thread (<= 256 KiB at kKC)

// Weights packed at load (f32/f16/bf16): tasks tile both m and n, so threads balance well even
// when other processes steal time, and no weight is decoded per call.
template <class Load>
void matmul_packed(const MatmulArgs& a, const PanelWeight& pw, ThreadPool& pool) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  constexpr int64_t kMC = 8 * kMR;  // rows per task (48: an A block of kMC x kKC floats fits L2)
  const int64_t m_tasks = (m + kMC - 1) / kMC;
  // Panels per task: 4 (64 columns), fewer when there are too few tasks to keep threads busy.
  int64_t per = 4;
  while (per > 1 && m_tasks * ((pw.n_panels + per - 1) / per) < 4 * pool.size()) per /= 2;
  const int64_t n_tasks_n = (pw.n_panels + per - 1) / per;
  pool.run(m_tasks * n_tasks_n, [&](int64_t task) {
    const int64_t i0 = (task / n_tasks_n) * kMC, i1 = std::min(m, i0 + kMC);
    const int64_t p0 = (task % n_tasks_n) * per, p1 = std::min(pw.n_panels, p0 + per);
    init_matmul_output(a, i0, i1, p0 * kNR, std::min(n, p1 * kNR));
    // 16-bit weights: as on the AVX-512 path (matmul_avx512.cpp), a task with four or more row
    // tiles widens each k-slice of a panel to f32 once and runs the f32 kernel over all its rows;
    // fewer rows convert in place. Exact: same results either way.
    const bool widen = !std::is_same_v<Load, LoadF32> && i1 - i0 > 3 * kMR;
    thread_local std::vector<float> wide;
    if (widen) wide.resize(static_cast<size_t>(kKC * kNR));
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t p = p0; p < p1; p++) {
        const int nv = static_cast<int>(std::min<int64_t>(kNR, n - p * kNR));
        const void* panel = pw.panel(p, k0);
        if (widen) {
          for (int64_t t = 0; t < kc; t++) {
            __m256 lo, hi;
            Load::load(panel, t * kNR, lo, hi);
            _mm256_storeu_ps(wide.data() + t * kNR, lo);
            _mm256_storeu_ps(wide.data() + t * kNR + 8, hi);
          }
        }
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          if (widen) kKernels<LoadF32>[mr](kc, x + i * k + k0, k, wide.data(), kNR, y + i * n + p * kNR, n, nv);
          else kKernels<Load>[mr](kc, x + i * k + k0, k, panel, kNR, y + i * n + p * kNR, n, nv);
        }
      }
    }
  });
}

// In-register transpose of 8 rows of 8 floats.
inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Decodes weight rows [j0, j0 + 16) x [k0, k0 + kc) and stores them transposed as panel[kc][16];
// rows past n are zero.
void pack_panel(const Tensor& w, int64_t j0, int64_t k0, int64_t kc, float* panel, float* tmp) {
  const int64_t n = w.rows;
  const size_t rb = w.row_bytes();
  for (int r = 0; r < kNR; r++) {
    float* dst = tmp + r * kc;
    if (j0 + r < n) decode_row_segment(w.dtype, static_cast<const char*>(w.data) + (j0 + r) * rb, k0, kc, dst);
    else std::fill(dst, dst + kc, 0.0f);
  }
  // Transpose tmp[16][kc] into panel[kc][16] in 8x8 tiles (kc is a multiple of 8 except for
  // unquantized weights, whose tail goes element by element).
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8)
    for (int half = 0; half < 2; half++) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(tmp + (8 * half + i) * kc + p);
      transpose8x8(r);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(panel + (p + i) * kNR + 8 * half, r[i]);
    }
  for (; p < kc; p++)
    for (int r = 0; r < kNR; r++) panel[p * kNR + r] = tmp[r * kc + p];
}

struct Scratch {
  std::vector<float, std::allocator<float>> panels, tmp;
  float* aligned_panels(size_t n) {
    panels.resize(n + 8);
    auto addr = reinterpret_cast<uintptr_t>(panels.data());
    return reinterpret_cast<float*>((addr + 31) & ~uintptr_t{31});
  }
};

// Runs the 16-wide kernel over panels [p0, p1) decoded for one k-block.
void run_panels_avx2(const MatmulArgs& a, int64_t k0, int64_t kc, const float* panels, int64_t panel_floats, int64_t p0,
                     int64_t p1) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  for (int64_t i = 0; i < m; i += kMR) {
    const int mr = static_cast<int>(std::min<int64_t>(kMR, m - i));
    for (int64_t p = p0; p < p1; p++) {
      const int nv = static_cast<int>(std::min<int64_t>(kNR, n - p * kNR));
      kKernels<LoadF32>[mr](kc, x + i * k + k0, k, panels + (p - p0) * panel_floats, kNR, y + i * n + p * kNR, n, nv);
    }
  }
}

}  // namespace

void matmul_decoded(const MatmulArgs& a, ThreadPool& pool, PanelRunner run) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const int64_t n_panels = (n + kNR - 1) / kNR;
  const int64_t per_task = std::clamp<int64_t>((n_panels + pool.size() - 1) / pool.size(), 1, kMaxPanels);
  const int64_t n_tasks = (n_panels + per_task - 1) / per_task;
  pool.run(n_tasks, [&](int64_t task) {
    thread_local Scratch scratch;
    const int64_t p0 = task * per_task, p1 = std::min(n_panels, p0 + per_task);
    init_matmul_output(a, 0, m, p0 * kNR, std::min(n, p1 * kNR));
    const int64_t panel_floats = kKC * kNR;
    float* panels = scratch.aligned_panels(static_cast<size_t>((p1 - p0) * panel_floats));
    scratch.tmp.resize(static_cast<size_t>(kKC * kNR));
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t p = p0; p < p1; p++) pack_panel(a.w, p * kNR, k0, kc, panels + (p - p0) * panel_floats, scratch.tmp.data());
      run(a, k0, kc, panels, panel_floats, p0, p1);
    }
  });
}

void matmul(const MatmulArgs& a, ThreadPool& pool) {
  if (a.w.packed) {
    const auto& pw = packed_as<PanelWeight>(a.w);
    switch (pw.dtype) {
      case DType::F16: return matmul_packed<LoadF16>(a, pw, pool);
      case DType::BF16: return matmul_packed<LoadBF16>(a, pw, pool);
      default: return matmul_packed<LoadF32>(a, pw, pool);
    }
  }
  matmul_decoded(a, pool, run_panels_avx2);
}

}  // namespace embed::cpu::avx2

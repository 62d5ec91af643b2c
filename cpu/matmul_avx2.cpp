// GEMM y[m, n] (+)= x[m, k] . w[n, k]^T + bias with AVX2/FMA.
// Layout: w rows (output features) are decoded and packed into 16-wide column panels
// [kc][16] per k-block; x rows are read in place (6 rows broadcast per step); a 6x16 register
// tile accumulates in f32. Threads split the output columns, so each thread decodes only its
// own weight rows. Every output element is accumulated in the same order whatever m is, so a
// row's result does not depend on the other rows in the batch (batch invariance).
#include <algorithm>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/packed_weight.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {
namespace {

constexpr int kMR = 6;
constexpr int kNR = 16;
constexpr int64_t kKC = 256;         // k-block: a multiple of every block size (32, 256)
constexpr int64_t kMaxPanels = 16;   // panels packed at once per thread (<= 256 KiB at kKC)

// Accumulators are named variables, not arrays: GCC keeps arrays of __m256 on the stack when a
// later loop indexes them, which costs a store per FMA.
// B loaders: 16 consecutive values of a panel row as two f32 vectors.
struct LoadF32 {
  static void load(const void* b, int64_t p, __m256& b0, __m256& b1) {
    const float* f = static_cast<const float*>(b) + p * kNR;
    b0 = _mm256_loadu_ps(f);
    b1 = _mm256_loadu_ps(f + 8);
  }
};
struct LoadF16 {
  static void load(const void* b, int64_t p, __m256& b0, __m256& b1) {
    const uint16_t* h = static_cast<const uint16_t*>(b) + p * kNR;
    b0 = load_f16x8(h);
    b1 = load_f16x8(h + 8);
  }
};
struct LoadBF16 {
  static void load(const void* b, int64_t p, __m256& b0, __m256& b1) {
    const uint16_t* h = static_cast<const uint16_t*>(b) + p * kNR;
    b0 = load_bf16x8(h);
    b1 = load_bf16x8(h + 8);
  }
};

template <int MR, class Load>
inline void micro_kernel(int64_t kc, const float* a, int64_t lda, const void* b, float* c, int64_t ldc, int n_valid) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  const float* a4 = a + 4 * lda;
  const float* a5 = a + 5 * lda;
  for (int64_t p = 0; p < kc; p++) {
    __m256 b0, b1;
    Load::load(b, p, b0, b1);
#define EMBED_ROW(r)                                          \
  if constexpr (MR > r) {                                     \
    const __m256 ar = _mm256_broadcast_ss(a##r + p);          \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);               \
    c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);               \
  }
    EMBED_ROW(0) EMBED_ROW(1) EMBED_ROW(2) EMBED_ROW(3) EMBED_ROW(4) EMBED_ROW(5)
#undef EMBED_ROW
  }
  const __m256i m0 = tail_mask(std::min(n_valid, 8)), m1 = tail_mask(std::max(n_valid - 8, 0));
  auto store = [&](float* cr, __m256 lo, __m256 hi) {
    if (n_valid == kNR) {
      _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), lo));
      _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), hi));
    } else {
      _mm256_maskstore_ps(cr, m0, _mm256_add_ps(_mm256_maskload_ps(cr, m0), lo));
      _mm256_maskstore_ps(cr + 8, m1, _mm256_add_ps(_mm256_maskload_ps(cr + 8, m1), hi));
    }
  };
  store(c, c00, c01);
  if constexpr (MR > 1) store(c + ldc, c10, c11);
  if constexpr (MR > 2) store(c + 2 * ldc, c20, c21);
  if constexpr (MR > 3) store(c + 3 * ldc, c30, c31);
  if constexpr (MR > 4) store(c + 4 * ldc, c40, c41);
  if constexpr (MR > 5) store(c + 5 * ldc, c50, c51);
}

using KernelFn = void (*)(int64_t, const float*, int64_t, const void*, float*, int64_t, int);
template <class Load>
constexpr KernelFn kKernels[kMR + 1] = {nullptr,
                                        micro_kernel<1, Load>, micro_kernel<2, Load>, micro_kernel<3, Load>,
                                        micro_kernel<4, Load>, micro_kernel<5, Load>, micro_kernel<6, Load>};

// y = (accumulate ? y : 0) + bias over rows [i0, i1) x columns [j0, j1): the starting value every
// k-block's partial sums are added to, the same whatever the tiling.
void init_output(const MatmulArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const int64_t n = a.w.rows;
  const float* bias = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  float* y = a.y.ptr<float>();
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = j0; j < j1; j++) y[i * n + j] = (a.accumulate ? y[i * n + j] : 0.0f) + (bias ? bias[j] : 0.0f);
}

// Weights packed at load (f32/f16/bf16): tasks tile both m and n, so threads balance well even
// when other processes steal time, and no weight is decoded per call.
template <class Load>
void matmul_packed(const MatmulArgs& a, const PackedWeight& pw, ThreadPool& pool) {
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
    init_output(a, i0, i1, p0 * kNR, std::min(n, p1 * kNR));
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t p = p0; p < p1; p++) {
        const int nv = static_cast<int>(std::min<int64_t>(kNR, n - p * kNR));
        for (int64_t i = i0; i < i1; i += kMR) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
          kKernels<Load>[mr](kc, x + i * k + k0, k, pw.panel(p, k0), y + i * n + p * kNR, n, nv);
        }
      }
    }
  });
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
  for (int64_t p = 0; p < kc; p++)
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

}  // namespace

void matmul(const MatmulArgs& a, ThreadPool& pool) {
  if (a.w.packed) {
    const auto& pw = *static_cast<const PackedWeight*>(a.w.packed);
    switch (pw.dtype) {
      case DType::F16: return matmul_packed<LoadF16>(a, pw, pool);
      case DType::BF16: return matmul_packed<LoadBF16>(a, pw, pool);
      default: return matmul_packed<LoadF32>(a, pw, pool);
    }
  }
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  const int64_t n_panels = (n + kNR - 1) / kNR;
  const int64_t per_task = std::clamp<int64_t>((n_panels + pool.size() - 1) / pool.size(), 1, kMaxPanels);
  const int64_t n_tasks = (n_panels + per_task - 1) / per_task;

  pool.run(n_tasks, [&](int64_t task) {
    thread_local Scratch scratch;
    const int64_t p0 = task * per_task, p1 = std::min(n_panels, p0 + per_task);
    const int64_t j0 = p0 * kNR, j1 = std::min(n, p1 * kNR);
    init_output(a, 0, m, j0, j1);
    const int64_t panel_floats = kKC * kNR;
    float* panels = scratch.aligned_panels(static_cast<size_t>((p1 - p0) * panel_floats));
    scratch.tmp.resize(static_cast<size_t>(kKC * kNR));
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t p = p0; p < p1; p++) pack_panel(a.w, p * kNR, k0, kc, panels + (p - p0) * panel_floats, scratch.tmp.data());
      for (int64_t i = 0; i < m; i += kMR) {
        const int mr = static_cast<int>(std::min<int64_t>(kMR, m - i));
        for (int64_t p = p0; p < p1; p++) {
          const int64_t j = p * kNR;
          const int nv = static_cast<int>(std::min<int64_t>(kNR, n - j));
          kKernels<LoadF32>[mr](kc, x + i * k + k0, k, panels + (p - p0) * panel_floats, y + i * n + j, n, nv);
        }
      }
    }
  });
}

}  // namespace embed::cpu::avx2

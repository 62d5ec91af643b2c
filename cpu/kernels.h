// Internal declarations of the CPU fast kernels (AVX2/FMA/F16C, compiled with per-file ISA
// flags and called only when cpu_features().has_fast_path()). Each has a scalar twin in cpu/ref/.
#pragma once

#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace embed::cpu::avx2 {

void gather(const GatherArgs& a, ThreadPool& pool);
void matmul(const MatmulArgs& a, ThreadPool& pool);
// The matmul for weights without a packed copy (quantized): each task decodes its weight rows into
// f32 panels of 16 rows x 256 k per k-block and hands them to `run`, which multiplies panels
// [p0, p1) (the AVX2 16-wide kernel, or the AVX-512 32-wide one).
using PanelRunner = void (*)(const MatmulArgs& a, int64_t k0, int64_t kc, const float* panels, int64_t panel_floats,
                             int64_t p0, int64_t p1);
void matmul_decoded(const MatmulArgs& a, ThreadPool& pool, PanelRunner run);
void layer_norm(const LayerNormArgs& a, ThreadPool& pool);
void rms_norm(const RmsNormArgs& a, ThreadPool& pool);
void attention(const AttentionArgs& a, ThreadPool& pool);
void activation(const ActivationArgs& a, ThreadPool& pool);
void glu(const GluArgs& a, ThreadPool& pool);
void add(const AddArgs& a, ThreadPool& pool);
void scale(const ScaleArgs& a, ThreadPool& pool);
void pool_rows(const PoolArgs& a, ThreadPool& pool);
void softmax(const SoftmaxArgs& a, ThreadPool& pool);

// Decodes elements [k0, k0 + n) of one weight row of type t to f32 (k0 and n multiples of the
// block size, except for unquantized types).
void decode_row_segment(DType t, const void* row, int64_t k0, int64_t n, float* out);

}  // namespace embed::cpu::avx2

// AVX-512 versions (cpu/*_avx512.cpp, compiled with -mavx512f; used when the CPU has it).
namespace embed::cpu {
struct PackedWeight;
}
namespace embed::cpu::avx512 {
void matmul_packed(const MatmulArgs& a, const PackedWeight& pw, ThreadPool& pool);
// avx2::matmul_decoded's panel runner with the 32-wide tile.
void run_panels(const MatmulArgs& a, int64_t k0, int64_t kc, const float* panels, int64_t panel_floats, int64_t p0, int64_t p1);
void attention(const AttentionArgs& a, ThreadPool& pool);
}  // namespace embed::cpu::avx512

namespace embed::cpu {
// Portable kernels cheap enough not to need SIMD (tables do the work).
void rope_fast(const RopeArgs& a, ThreadPool& pool);
// GEMM output y = (accumulate ? y : 0) + bias over rows [i0, i1) x columns [j0, j1): the starting
// value every k-block's partial sums are added to, the same whatever the tiling or ISA.
void init_matmul_output(const MatmulArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
}  // namespace embed::cpu

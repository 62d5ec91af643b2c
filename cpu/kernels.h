// Internal declarations of the CPU fast kernels (AVX2/FMA/F16C, compiled with per-file ISA
// flags and called only when cpu_features().has_fast_path()). Each has a scalar twin in cpu/ref/.
#pragma once

#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace embed::cpu::avx2 {

void gather(const GatherArgs& a, ThreadPool& pool);
void matmul(const MatmulArgs& a, ThreadPool& pool);
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

namespace embed::cpu {
// Portable kernels cheap enough not to need SIMD (tables do the work).
void rope_fast(const RopeArgs& a, ThreadPool& pool);
void normalize_rows(const NormalizeArgs& a, ThreadPool& pool);
}  // namespace embed::cpu

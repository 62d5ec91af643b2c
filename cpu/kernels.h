// Internal declarations of the CPU kernels per ISA level (each compiled with its own per-file ISA
// flags) and the KernelTable that binds one level's kernels together. Each kernel has a scalar
// twin in cpu/ref/, the oracle of the kernel tests.
#pragma once

#include <memory>

#include "cpu/packed_weight.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace embed::cpu {

// The kernels of one (ISA level, compute type), chosen once per backend; every entry is set.
// Ops that a level does not speed up point at the level below (AVX-512 and AMX share most of the
// AVX2 elementwise kernels).
struct KernelTable {
  CpuIsa isa = CpuIsa::Scalar;
  ComputeType compute = ComputeType::F32;
  void (*gather)(const GatherArgs&, ThreadPool&) = nullptr;
  void (*matmul)(const MatmulArgs&, ThreadPool&) = nullptr;
  bool matmul_fuses_activation = false;  // else MatmulArgs::activation runs as the activation op after
  void (*layer_norm)(const LayerNormArgs&, ThreadPool&) = nullptr;
  void (*rms_norm)(const RmsNormArgs&, ThreadPool&) = nullptr;
  void (*rope)(const RopeArgs&, ThreadPool&) = nullptr;
  void (*attention)(const AttentionArgs&, ThreadPool&) = nullptr;
  void (*activation)(const ActivationArgs&, ThreadPool&) = nullptr;
  void (*glu)(const GluArgs&, ThreadPool&) = nullptr;
  void (*add)(const AddArgs&, ThreadPool&) = nullptr;
  void (*scale)(const ScaleArgs&, ThreadPool&) = nullptr;
  void (*pool)(const PoolArgs&, ThreadPool&) = nullptr;
  void (*softmax)(const SoftmaxArgs&, ThreadPool&) = nullptr;
  // Lays a matmul weight out for this level's GEMM once, at load; nullptr (or a null result):
  // the GEMM reads the weight as stored (quantized weights are decoded per call).
  std::unique_ptr<PackedWeight> (*pack_matmul_weight)(const Tensor& w) = nullptr;
};

// The table of `isa` (not Auto) computing in `compute`; throws embed::Error(Unsupported) for a
// compute type the level has no kernels for.
const KernelTable& kernel_table(CpuIsa isa, ComputeType compute);

}  // namespace embed::cpu

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
namespace embed::cpu::avx512 {
// Panel weights (packed at load in their stored type: f32, f16, bf16) or quantized ones decoded
// per call (avx2::matmul_decoded); fuses MatmulArgs::activation.
void matmul(const MatmulArgs& a, ThreadPool& pool);
// f32/f16/bf16 weights as panels of their stored type (pack_panels); nullptr for quantized ones.
std::unique_ptr<PackedWeight> pack_weight(const Tensor& w);
// avx2::matmul_decoded's panel runner with the 32-wide tile.
void run_panels(const MatmulArgs& a, int64_t k0, int64_t kc, const float* panels, int64_t panel_floats, int64_t p0, int64_t p1);
void attention(const AttentionArgs& a, ThreadPool& pool);
void activation(const ActivationArgs& a, ThreadPool& pool);
void glu(const GluArgs& a, ThreadPool& pool);
// Compute type Int8 without AMX (AVX-512 VNNI): block-quantized weights packed at load, the
// products of cpu/int8_blocks.h by vpdpbusd; float weights take the f32 panels of matmul.
void matmul_int8(const MatmulArgs& a, ThreadPool& pool);
std::unique_ptr<PackedWeight> pack_weight_int8(const Tensor& w);
// Compute type BF16 without AMX (AVX512-BF16 vdpbf16ps, matmul_bf16_avx512.cpp): float weights
// rounded to bf16 pair panels at load, activations rounded per call, f32 sums; quantized weights
// take matmul (f32-grade). Fuses MatmulArgs::activation.
void matmul_bf16(const MatmulArgs& a, ThreadPool& pool);
std::unique_ptr<PackedWeight> pack_weight_bf16(const Tensor& w);
// The k-block of matmul_bf16: its sums restart at 0 every kBf16KBlock k values (the order
// ref::matmul_bf16_pairs reproduces).
constexpr int64_t kBf16KBlock = 256;
// Attention at compute type BF16 without AMX (attention_bf16_avx512.cpp): Q . K^T and P . V as
// vdpbf16ps products with f32 sums, softmax in f32, in the order ref::attention_bf16_pairs
// reproduces; head sizes not a multiple of 32 and position biases take attention (f32).
void attention_bf16(const AttentionArgs& a, ThreadPool& pool);
}  // namespace embed::cpu::avx512

// AMX versions (cpu/*_amx.cpp, compiled with the AMX and AVX-512 BF16 flags; used when the CPU
// has AMX and the OS granted the tile state). F32: f32-grade results from split bf16 operands;
// BF16: one bf16 product per pair; Int8: integer products for quantized weights.
namespace embed::cpu::amx {
void matmul_f32(const MatmulArgs& a, ThreadPool& pool);
void matmul_bf16(const MatmulArgs& a, ThreadPool& pool);
std::unique_ptr<PackedWeight> pack_weight_f32(const Tensor& w);
std::unique_ptr<PackedWeight> pack_weight_bf16(const Tensor& w);
void attention_f32(const AttentionArgs& a, ThreadPool& pool);
void attention_bf16(const AttentionArgs& a, ThreadPool& pool);
// Compute type Int8: block-quantized weights (packed at load into int8 tiles) multiply activations
// quantized per row as llama.cpp quantizes them; float weights take matmul_f32.
void matmul_int8(const MatmulArgs& a, ThreadPool& pool);
std::unique_ptr<PackedWeight> pack_weight_int8(const Tensor& w);
}  // namespace embed::cpu::amx

namespace embed::cpu {
// Portable kernels cheap enough not to need SIMD (tables do the work).
void rope_fast(const RopeArgs& a, ThreadPool& pool);
// GEMM output y = (accumulate ? y : 0) + bias over rows [i0, i1) x columns [j0, j1): the starting
// value every k-block's partial sums are added to, the same whatever the tiling or ISA.
void init_matmul_output(const MatmulArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
}  // namespace embed::cpu

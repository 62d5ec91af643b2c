// Launchers of the CUDA kernels, one group per cuda/<op>.cu file. Each takes the engine's args
// struct (device pointers; shapes and dtypes already checked by engine/ops.cpp) and the stream of
// the calling backend. They only enqueue work: errors in the launch itself throw at once, faults
// inside a kernel surface at the backend's next synchronizing call.
#pragma once

#include "cuda/cuda_check.h"
#include "engine/backend.h"

namespace embed::cuda {

// gather.cu: table of any weight type, rows decoded exactly.
void launch_gather(const GatherArgs& a, cudaStream_t stream);

// dequant.cu: decodes `rows` rows of a raw GGUF tensor (already in device memory) to F32, F16
// or BF16 [rows, cols]. For F16 output, *overflow (device) is set to 1 when a value exceeds the
// f16 range (the caller then decodes to BF16 instead).
void launch_decode_rows(const Tensor& raw, void* out, DType out_type, unsigned* overflow, cudaStream_t stream);

// matmul.cu: the f32 path (every weight widened to f32): y (+)= x . w^T + bias, one thread
// accumulating each output in k order, so a row never depends on the batch it is in.
void launch_matmul_f32(const MatmulArgs& a, cudaStream_t stream);
// Pieces of the tensor-core path around cuBLAS (cuda/cublas_gemm.cpp):
// y[m, n] = (accumulate ? y : 0) + bias[n] (bias may be null: then only the zeroing).
void launch_prepare_output(float* y, const float* bias, int64_t m, int64_t n, bool accumulate, cudaStream_t stream);
// x (f32, n values) -> bf16 bits.
void launch_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);
// x (f32, n values) -> f16 bits of x * 2^-s, where s >= 0 is the smallest shift that keeps
// max|x| * 2^-s inside the f16 range (s = 0 whenever it already is); *alpha (device) = 2^s, the
// factor the GEMM multiplies back. `absmax_bits` is a device scratch word.
void launch_to_half_scaled(const float* x, int64_t n, uint16_t* out, unsigned* absmax_bits, float* alpha,
                           cudaStream_t stream);

// norm.cu
void launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream);
void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream);

// rope.cu
void launch_rope(const RopeArgs& a, cudaStream_t stream);

// attention.cu: d_head up to kMaxAttentionHead (Error(Unsupported) beyond).
constexpr int kMaxAttentionHead = 256;
void launch_attention(const AttentionArgs& a, cudaStream_t stream);
// attention_tc.cu: the tensor-core attention of the default mode (q, k, v and the probabilities
// rounded to f16, f32 accumulation and softmax), for d_head a multiple of 16 up to 256.
// `absmax` is 3 words of device scratch.
bool attention_tensor_cores_supported(const AttentionArgs& a);
void launch_attention_tensor_cores(const AttentionArgs& a, unsigned* absmax, cudaStream_t stream);

// elementwise.cu
void launch_activation(const ActivationArgs& a, cudaStream_t stream);
void launch_glu(const GluArgs& a, cudaStream_t stream);
void launch_add(const AddArgs& a, cudaStream_t stream);
void launch_scale(const ScaleArgs& a, cudaStream_t stream);
void launch_softmax(const SoftmaxArgs& a, cudaStream_t stream);

// pool.cu
void launch_pool(const PoolArgs& a, cudaStream_t stream);

}  // namespace embed::cuda

// Token-embedding gather on the GPU: out[t, :] (+)= scale * decode(table[ids[t], :]).
// Shapes: table [n_vocab, d_model] (F32/F16/BF16/Q8_0 rows), ids [n_tokens] int32 (already
// range-checked by the engine), out [n_tokens, d_model] f32. Geometry: one block per token,
// threads stride over the row (d_model is a few hundred to a few thousand), so each block reads
// one contiguous row; Q8_0 threads decode one element each from its 34-byte block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

struct BlockQ8_0 {
  __half d;
  int8_t qs[32];
};

template <class Decode>
__global__ void gather_kernel(const char* table, size_t row_bytes, const int32_t* ids, int d, float* out, float scale,
                              bool accumulate, Decode decode) {
  const int t = blockIdx.x;
  const char* row = table + static_cast<size_t>(ids[t]) * row_bytes;
  float* o = out + static_cast<size_t>(t) * d;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    const float v = scale * decode(row, i);
    o[i] = accumulate ? o[i] + v : v;
  }
}

struct DecodeF32 {
  __device__ float operator()(const char* row, int i) const { return reinterpret_cast<const float*>(row)[i]; }
};
struct DecodeF16 {
  __device__ float operator()(const char* row, int i) const { return __half2float(reinterpret_cast<const __half*>(row)[i]); }
};
struct DecodeBF16 {
  __device__ float operator()(const char* row, int i) const {
    return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[i]);
  }
};
struct DecodeQ8_0 {
  __device__ float operator()(const char* row, int i) const {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + i / 32;
    return __half2float(b->d) * static_cast<float>(b->qs[i % 32]);
  }
};

template <class Decode>
void launch(const GatherArgs& a, cudaStream_t stream, Decode decode) {
  if (a.n_tokens == 0) return;
  const int d = static_cast<int>(a.table.cols);
  const int threads = d >= 256 ? 256 : 128;
  gather_kernel<<<static_cast<unsigned>(a.n_tokens), threads, 0, stream>>>(
      static_cast<const char*>(a.table.data), a.table.row_bytes(), a.ids, d, a.out.ptr<float>(), a.scale, a.accumulate, decode);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_gather(const GatherArgs& a, cudaStream_t stream) {
  switch (a.table.dtype) {
    case DType::F32: launch(a, stream, DecodeF32{}); return;
    case DType::F16: launch(a, stream, DecodeF16{}); return;
    case DType::BF16: launch(a, stream, DecodeBF16{}); return;
    case DType::Q8_0: launch(a, stream, DecodeQ8_0{}); return;
    default:
      fail(ErrorKind::Unsupported, std::string("cuda gather: table type ") + dtype_name(a.table.dtype) + " is not supported");
  }
}

}  // namespace embed::cuda

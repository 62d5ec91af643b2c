// Token-embedding gather on the GPU: out[t, :] (+)= scale * decode(table[ids[t], :]).
// Shapes: table [n_vocab, d_model] of any weight type, kept as stored (the quantized ones are
// decoded here, bit-exact with gguf/quants.cpp: tables stay small), ids [n_tokens] int32
// (range-checked by the engine), out [n_tokens, d_model] f32. Geometry: one block per token
// (grid-stride beyond the grid limit), threads stride over the row, so each block reads one
// contiguous row. Exact: decoding is exact, then one product and one sum.
#include "cuda/decode.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

template <class Decode>
__global__ void gather_kernel(const uint8_t* table, size_t row_bytes, const int32_t* ids, int64_t n_tokens, int64_t d,
                              float* out, float scale, bool accumulate) {
  for (int64_t t = blockIdx.x; t < n_tokens; t += gridDim.x) {
    const uint8_t* row = table + static_cast<size_t>(ids[t]) * row_bytes;
    float* o = out + t * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float v = __fmul_rn(scale, Decode::at(row, i));
      o[i] = accumulate ? __fadd_rn(o[i], v) : v;
    }
  }
}

template <class Decode>
void launch(const GatherArgs& a, cudaStream_t stream) {
  const int threads = a.table.cols >= 256 ? 256 : 128;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.n_tokens, 1 << 20));
  EMBED_LAUNCH(gather_kernel<Decode>, blocks, threads, 0, stream)(static_cast<const uint8_t*>(a.table.data), a.table.row_bytes(),
                                                                 a.ids, a.n_tokens, a.table.cols, a.out.ptr<float>(), a.scale,
                                                                 a.accumulate);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_gather(const GatherArgs& a, cudaStream_t stream) {
  if (a.n_tokens == 0) return;
  switch (a.table.dtype) {
    case DType::F32: launch<DecodeF32>(a, stream); return;
    case DType::F16: launch<DecodeF16>(a, stream); return;
    case DType::BF16: launch<DecodeBF16>(a, stream); return;
    case DType::Q4_0: launch<DecodeQ4_0>(a, stream); return;
    case DType::Q4_1: launch<DecodeQ4_1>(a, stream); return;
    case DType::Q5_0: launch<DecodeQ5_0>(a, stream); return;
    case DType::Q5_1: launch<DecodeQ5_1>(a, stream); return;
    case DType::Q8_0: launch<DecodeQ8_0>(a, stream); return;
    case DType::Q4_K: launch<DecodeQ4_K>(a, stream); return;
    case DType::Q5_K: launch<DecodeQ5_K>(a, stream); return;
    case DType::Q6_K: launch<DecodeQ6_K>(a, stream); return;
    case DType::I32: break;
  }
  fail(ErrorKind::Unsupported, std::string("cuda gather: no decoder for table type ") + dtype_name(a.table.dtype));
}

}  // namespace embed::cuda

// Load-time weight decoding on the GPU: a raw GGUF tensor [rows, cols] of any supported type,
// already copied to the device, becomes F32, F16 or BF16 [rows, cols]. One thread per output
// element (grid-stride), decoding with cuda/decode.cuh (bit-exact with gguf/quants.cpp), so the
// F32 result equals the CPU's dequantization and F16/BF16 are its round-to-nearest-even.
#include "cuda/decode.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

struct StoreF32 {
  __device__ static void put(void* out, int64_t i, float v, unsigned*) { static_cast<float*>(out)[i] = v; }
};
struct StoreF16 {
  __device__ static void put(void* out, int64_t i, float v, unsigned* overflow) {
    if (!(fabsf(v) <= 65504.0f)) *overflow = 1u;  // also catches NaN: never silently kept
    static_cast<uint16_t*>(out)[i] = float_to_half(v);
  }
};
struct StoreBF16 {
  __device__ static void put(void* out, int64_t i, float v, unsigned*) { static_cast<uint16_t*>(out)[i] = float_to_bf16(v); }
};

template <class Decode, class Store>
__global__ void decode_rows_kernel(const uint8_t* raw, size_t row_bytes, int64_t rows, int64_t cols, void* out,
                                   unsigned* overflow) {
  const int64_t n = rows * cols;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = e / cols, c = e % cols;
    Store::put(out, e, Decode::at(raw + static_cast<size_t>(r) * row_bytes, c), overflow);
  }
}

template <class Decode>
void launch_for(const Tensor& raw, void* out, DType out_type, unsigned* overflow, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const unsigned blocks = elementwise_blocks(raw.numel(), kThreads);
  const auto* src = static_cast<const uint8_t*>(raw.data);
  if (out_type == DType::F32) {
    auto* const kernel = &decode_rows_kernel<Decode, StoreF32>;
    EMBED_LAUNCH(kernel, blocks, kThreads, 0, stream)(src, raw.row_bytes(), raw.rows, raw.cols, out, overflow);
  } else if (out_type == DType::F16) {
    auto* const kernel = &decode_rows_kernel<Decode, StoreF16>;
    EMBED_LAUNCH(kernel, blocks, kThreads, 0, stream)(src, raw.row_bytes(), raw.rows, raw.cols, out, overflow);
  } else {
    EMBED_CHECK(out_type == DType::BF16, "decode_rows: output must be F32, F16 or BF16");
    auto* const kernel = &decode_rows_kernel<Decode, StoreBF16>;
    EMBED_LAUNCH(kernel, blocks, kThreads, 0, stream)(src, raw.row_bytes(), raw.rows, raw.cols, out, overflow);
  }
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_decode_rows(const Tensor& raw, void* out, DType out_type, unsigned* overflow, cudaStream_t stream) {
  if (raw.numel() == 0) return;
  switch (raw.dtype) {
    case DType::F32: launch_for<DecodeF32>(raw, out, out_type, overflow, stream); return;
    case DType::F16: launch_for<DecodeF16>(raw, out, out_type, overflow, stream); return;
    case DType::BF16: launch_for<DecodeBF16>(raw, out, out_type, overflow, stream); return;
    case DType::Q4_0: launch_for<DecodeQ4_0>(raw, out, out_type, overflow, stream); return;
    case DType::Q4_1: launch_for<DecodeQ4_1>(raw, out, out_type, overflow, stream); return;
    case DType::Q5_0: launch_for<DecodeQ5_0>(raw, out, out_type, overflow, stream); return;
    case DType::Q5_1: launch_for<DecodeQ5_1>(raw, out, out_type, overflow, stream); return;
    case DType::Q8_0: launch_for<DecodeQ8_0>(raw, out, out_type, overflow, stream); return;
    case DType::Q4_K: launch_for<DecodeQ4_K>(raw, out, out_type, overflow, stream); return;
    case DType::Q5_K: launch_for<DecodeQ5_K>(raw, out, out_type, overflow, stream); return;
    case DType::Q6_K: launch_for<DecodeQ6_K>(raw, out, out_type, overflow, stream); return;
    case DType::I32: break;
  }
  fail(ErrorKind::Unsupported, std::string("cuda: no decoder for weight type ") + dtype_name(raw.dtype));
}

}  // namespace embed::cuda

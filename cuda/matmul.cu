// Matmul kernels of the CUDA backend that are not cuBLAS: the deterministic f32 GEMM (the path
// for f32 weights, and for every weight in the f32 mode), and the small kernels around the
// tensor-core GEMM of cuda/cublas_gemm.cpp (output preparation, activation conversion).
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

// f32 GEMM  y[m, n] (+)= x[m, k] . w[n, k]^T + bias[n], all row-major with k contiguous.
// Geometry: a 64 x 64 output tile per block of 256 threads, k consumed in slices of 16 staged in
// shared memory (transposed, padded by one word against bank conflicts); thread (tx, ty) owns
// rows ty + 16 i and columns tx + 16 j (i, j < 4), so shared reads are broadcasts or consecutive
// and global stores are coalesced. Accumulation: f32, one FMA chain per output in k order from
// zero: an output depends on its own row of x and column of w only, never on m or on the tiling,
// so a text's result is bit-identical alone and in any batch.
constexpr int kTile = 64, kSlice = 16, kThreads = 256, kPad = kTile + 1;

__global__ void __launch_bounds__(kThreads) matmul_f32_kernel(const float* x, const float* w, const float* bias, float* y,
                                                             int64_t m, int64_t n, int64_t k, bool accumulate) {
  EMBED_SHARED(float, xs, kSlice * kPad);
  EMBED_SHARED(float, ws, kSlice * kPad);
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int64_t m0 = int64_t{blockIdx.y} * kTile, n0 = int64_t{blockIdx.x} * kTile;
  float acc[4][4];
  for (auto& row : acc)
    for (float& v : row) v = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kSlice) {
    for (int e = tid; e < kTile * kSlice; e += kThreads) {
      const int r = e / kSlice, c = e % kSlice;
      const bool in_k = k0 + c < k;
      xs[c * kPad + r] = (in_k && m0 + r < m) ? x[(m0 + r) * k + k0 + c] : 0.0f;
      ws[c * kPad + r] = (in_k && n0 + r < n) ? w[(n0 + r) * k + k0 + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSlice; kk++) {
      float a[4], b[4];
      for (int i = 0; i < 4; i++) a[i] = xs[kk * kPad + ty + 16 * i];
      for (int j = 0; j < 4; j++) b[j] = ws[kk * kPad + tx + 16 * j];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const int64_t r = m0 + ty + 16 * i;
    if (r >= m) continue;
    for (int j = 0; j < 4; j++) {
      const int64_t c = n0 + tx + 16 * j;
      if (c >= n) continue;
      float v = acc[i][j];
      if (bias) v = __fadd_rn(v, bias[c]);
      float& out = y[r * n + c];
      out = accumulate ? __fadd_rn(out, v) : v;
    }
  }
}

__global__ void prepare_output_kernel(float* y, const float* bias, int64_t m, int64_t n, bool accumulate) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < m * n; e += int64_t{gridDim.x} * blockDim.x) {
    const float b = bias ? bias[e % n] : 0.0f;
    y[e] = accumulate ? __fadd_rn(y[e], b) : b;
  }
}

__global__ void to_bf16_kernel(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = float_to_bf16(x[i]);
}

// max |x| as the bits of a non-negative float (their integer order is their float order).
__global__ void absmax_kernel(const float* x, int64_t n, unsigned* absmax_bits) {
  float mx = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    mx = fmaxf(mx, fabsf(x[i]));
  mx = warp_max(mx);
  if ((threadIdx.x & 31) == 0) atomicMax(absmax_bits, __float_as_uint(mx));
}

__global__ void to_half_scaled_kernel(const float* x, int64_t n, uint16_t* out, const unsigned* absmax_bits, float* alpha) {
  const int s = half_shift(__uint_as_float(*absmax_bits));
  const float inv = ldexpf(1.0f, -s);  // a power of two: the scaling itself is exact
  if (blockIdx.x == 0 && threadIdx.x == 0) *alpha = ldexpf(1.0f, s);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = float_to_half(x[i] * inv);
}

}  // namespace

void launch_matmul_f32(const MatmulArgs& a, cudaStream_t stream) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  EMBED_CHECK(a.w.dtype == DType::F32, "launch_matmul_f32: weights must be f32");
  if (m == 0 || n == 0) return;
  EMBED_CHECK((m + kTile - 1) / kTile <= 65535, "launch_matmul_f32: too many rows for one launch");
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile));
  EMBED_LAUNCH(matmul_f32_kernel, grid, kThreads, 0, stream)(a.x.ptr<const float>(), a.w.ptr<const float>(),
                                                             a.bias.empty() ? nullptr : a.bias.ptr<const float>(),
                                                             a.y.ptr<float>(), m, n, k, a.accumulate);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_prepare_output(float* y, const float* bias, int64_t m, int64_t n, bool accumulate, cudaStream_t stream) {
  if (m * n == 0) return;
  EMBED_LAUNCH(prepare_output_kernel, elementwise_blocks(m * n, 256), 256, 0, stream)(y, bias, m, n, accumulate);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  if (n == 0) return;
  EMBED_LAUNCH(to_bf16_kernel, elementwise_blocks(n, 256), 256, 0, stream)(x, n, out);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_to_half_scaled(const float* x, int64_t n, uint16_t* out, unsigned* absmax_bits, float* alpha,
                           cudaStream_t stream) {
  EMBED_CUDA_CHECK(cudaMemsetAsync(absmax_bits, 0, sizeof(unsigned), stream));
  const unsigned blocks = std::min(elementwise_blocks(n, 256), 1024u);  // few atomics
  EMBED_LAUNCH(absmax_kernel, blocks, 256, 0, stream)(x, n, absmax_bits);
  EMBED_CUDA_CHECK_LAUNCH();
  EMBED_LAUNCH(to_half_scaled_kernel, elementwise_blocks(n, 256), 256, 0, stream)(x, n, out, absmax_bits, alpha);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

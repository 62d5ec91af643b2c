// LayerNorm and RMSNorm on the GPU. Shapes: x, y [rows, cols] f32 (y may alias x: each thread
// reads and writes only its own elements), weight/bias [cols] f32. Geometry: one block per row
// (grid-stride over rows), blockDim sized to cols; per-thread f32 partial sums in a fixed order,
// then a fixed-order block reduction, so a row's result depends on that row only. The per-row
// scalars (mean, 1/std) are finished in double, as the reference does.
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

int threads_for(int64_t cols) { return cols <= 256 ? 32 : (cols <= 1024 ? 128 : 256); }

__global__ void layer_norm_kernel(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t cols,
                                  float eps) {
  EMBED_SHARED(float, scratch, 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += xr[i];
    const float mean = static_cast<float>(static_cast<double>(block_sum(s, scratch)) / static_cast<double>(cols));
    float s2 = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      const float d = xr[i] - mean;
      s2 = fmaf(d, d, s2);
    }
    const double var = static_cast<double>(block_sum(s2, scratch)) / static_cast<double>(cols);
    const float inv = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      const float v = __fmul_rn(__fmul_rn(xr[i] - mean, inv), w[i]);
      yr[i] = b ? __fadd_rn(v, b[i]) : v;
    }
  }
}

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps) {
  EMBED_SHARED(float, scratch, 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    const double mean_sq = static_cast<double>(block_sum(ss, scratch)) / static_cast<double>(cols);
    const float inv = static_cast<float>(1.0 / sqrt(mean_sq + static_cast<double>(eps)));
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = __fmul_rn(__fmul_rn(xr[i], inv), w[i]);
  }
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(rows, 1), 1 << 20)); }

}  // namespace

void launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream) {
  if (a.x.rows == 0) return;
  EMBED_LAUNCH(layer_norm_kernel, row_blocks(a.x.rows), threads_for(a.x.cols), 0, stream)(
      a.x.ptr<const float>(), a.weight.ptr<const float>(), a.bias.empty() ? nullptr : a.bias.ptr<const float>(), a.y.ptr<float>(),
      a.x.rows, a.x.cols, a.eps);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.x.rows == 0) return;
  EMBED_LAUNCH(rms_norm_kernel, row_blocks(a.x.rows), threads_for(a.x.cols), 0, stream)(
      a.x.ptr<const float>(), a.weight.ptr<const float>(), a.y.ptr<float>(), a.x.rows, a.x.cols, a.eps);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

// Embedding normalization on the GPU (llama.cpp embd_normalize codes, after Matryoshka
// truncation to the first `dims` columns): x [rows, cols] f32 -> y [rows, dims] f32, y may alias
// x when dims == cols. p = -1 none, 0 max-abs scaled to 32760, 1 L1, 2 L2, > 2 p-norm; a zero row
// stays zero. Geometry: one block per row (rows are pooled vectors: few); the norm is reduced in
// double in a fixed order, as the reference does.
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

__global__ void normalize_kernel(const float* x, float* y, int64_t rows, int64_t cols, int dims, int p) {
  EMBED_SHARED(double, scratch, 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * dims;
    double part = 0.0;
    for (int i = static_cast<int>(threadIdx.x); i < dims; i += static_cast<int>(blockDim.x)) {
      const double v = fabs(static_cast<double>(xr[i]));
      if (p == 0) part = fmax(part, v);
      else if (p == 2) part += v * v;
      else if (p > 0) part += pow(v, p);
    }
    double norm = 1.0;
    if (p == 0) norm = block_max(part, scratch) / 32760.0;
    else if (p == 2) norm = sqrt(block_sum(part, scratch));
    else if (p > 0) norm = pow(block_sum(part, scratch), 1.0 / p);
    const double inv = norm > 0.0 ? 1.0 / norm : 0.0;
    for (int i = static_cast<int>(threadIdx.x); i < dims; i += static_cast<int>(blockDim.x))
      yr[i] = static_cast<float>(static_cast<double>(xr[i]) * inv);
  }
}

}  // namespace

void launch_normalize(const NormalizeArgs& a, cudaStream_t stream) {
  if (a.x.rows == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.x.rows, 1 << 20));
  EMBED_LAUNCH(normalize_kernel, blocks, 256, 0, stream)(a.x.ptr<const float>(), a.y.ptr<float>(), a.x.rows, a.x.cols, a.dims,
                                                        a.p);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

// Rotary embedding on the GPU, in place. Shapes: x [n_tokens, n_heads * d_head] f32, positions
// [n_tokens] int32. Geometry: one block per token (grid-stride); its threads first compute the
// token's cos/sin table in double (theta = pos * freq_scale * base^(-2i/n_rot), as the CPU does:
// at positions near 32k an f32 angle would be off by ~4e-3 rad) rounded once to f32 in shared
// memory, then rotate every head's pairs with it: NORM pairs (2i, 2i+1), NEOX pairs (i, i + n_rot/2).
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

constexpr int kMaxHalf = 2048;  // n_rot <= d_head <= 4096 (engine/weights.h limits)

__global__ void rope_kernel(float* x, const int32_t* positions, int64_t n_tokens, int64_t row_stride, int n_heads, int d_head,
                            int n_rot, bool neox, float freq_base, float freq_scale) {
  EMBED_SHARED(float, cos_table, kMaxHalf);
  EMBED_SHARED(float, sin_table, kMaxHalf);
  const int half = n_rot / 2;
  for (int64_t t = blockIdx.x; t < n_tokens; t += gridDim.x) {
    const double pos = static_cast<double>(positions[t]) * static_cast<double>(freq_scale);
    __syncthreads();  // the previous token's table is no longer read
    for (int i = static_cast<int>(threadIdx.x); i < half; i += static_cast<int>(blockDim.x)) {
      const double theta = pos * pow(static_cast<double>(freq_base), -2.0 * i / n_rot);
      cos_table[i] = static_cast<float>(cos(theta));
      sin_table[i] = static_cast<float>(sin(theta));
    }
    __syncthreads();
    float* row = x + t * row_stride;
    for (int e = static_cast<int>(threadIdx.x); e < n_heads * half; e += static_cast<int>(blockDim.x)) {
      const int h = e / half, i = e % half;
      float* xh = row + static_cast<int64_t>(h) * d_head;
      const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
      const float x0 = xh[i0], x1 = xh[i1], c = cos_table[i], s = sin_table[i];
      xh[i0] = x0 * c - x1 * s;
      xh[i1] = x0 * s + x1 * c;
    }
  }
}

}  // namespace

void launch_rope(const RopeArgs& a, cudaStream_t stream) {
  if (a.x.rows == 0) return;
  if (a.n_rot / 2 > kMaxHalf)
    fail(ErrorKind::Unsupported, "cuda rope: n_rot " + std::to_string(a.n_rot) + " exceeds " + std::to_string(2 * kMaxHalf));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.x.rows, 1 << 20));
  EMBED_LAUNCH(rope_kernel, blocks, 128, 0, stream)(a.x.ptr<float>(), a.positions, a.x.rows, a.x.cols, a.n_heads, a.d_head,
                                                   a.n_rot, a.mode == RopeMode::Neox, a.freq_base, a.freq_scale);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

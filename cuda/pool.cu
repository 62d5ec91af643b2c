// Pooling on the GPU: one row per sequence of x [n_tokens, d] f32 -> y [n_seqs, d] f32: the
// (token-weighted) mean of the sequence's rows, or its first or last row. Geometry: block
// (sequence, 128-column chunk); each thread owns one column and walks the sequence's tokens in
// order, accumulating in double as the reference does (pooling is a small part of a batch), so a
// sequence's vector never depends on its neighbours. A sequence whose weights sum to 0 pools to 0.
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void pool_kernel(const float* x, const int32_t* cu_seqlens, int64_t d, int kind, const float* token_weights,
                            float* y) {
  const int s = static_cast<int>(blockIdx.x);
  const int64_t c = int64_t{blockIdx.y} * kThreads + threadIdx.x;
  if (c >= d) return;
  const int begin = cu_seqlens[s], end = cu_seqlens[s + 1];
  float* out = y + int64_t{s} * d + c;
  if (end <= begin) {
    *out = 0.0f;
    return;
  }
  if (kind != static_cast<int>(PoolKind::Mean)) {
    const int t = kind == static_cast<int>(PoolKind::First) ? begin : end - 1;
    *out = x[int64_t{t} * d + c];
    return;
  }
  double acc = 0.0, wsum = 0.0;
  for (int t = begin; t < end; t++) {
    const double w = token_weights ? token_weights[t] : 1.0;
    wsum += w;
    acc += w * x[int64_t{t} * d + c];
  }
  *out = wsum > 0.0 ? static_cast<float>(acc / wsum) : 0.0f;
}

}  // namespace

void launch_pool(const PoolArgs& a, cudaStream_t stream) {
  const int64_t d = a.x.cols;
  if (a.n_seqs == 0 || d == 0) return;
  EMBED_CHECK((d + kThreads - 1) / kThreads <= 65535, "launch_pool: rows too wide");
  const dim3 grid(static_cast<unsigned>(a.n_seqs), static_cast<unsigned>((d + kThreads - 1) / kThreads));
  EMBED_LAUNCH(pool_kernel, grid, kThreads, 0, stream)(a.x.ptr<const float>(), a.cu_seqlens, d, static_cast<int>(a.kind),
                                                       a.kind == PoolKind::Mean ? a.token_weights : nullptr, a.y.ptr<float>());
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

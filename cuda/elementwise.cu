// Elementwise kernels on the GPU: activations, gated units, add (with row broadcast), scale, and
// the row softmax. All f32 in and out; outputs may alias inputs (each element is read, then
// written, by one thread). Geometry: grid-stride loops of 256 threads; softmax is one block per
// row with fixed-order reductions. Activations use the accurate library functions (erff, erfcf,
// expf, tanhf), written in forms that avoid cancellation in their tails.
#include "cuda/device.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

constexpr int kThreads = 256;

template <Activation A>
__device__ __forceinline__ float activate(float x) {
  if constexpr (A == Activation::GeluErf) {
    // 0.5 x (1 + erf(x / sqrt 2)); for x < 0 the same as 0.5 x erfc(-x / sqrt 2), without the cancellation.
    constexpr float kInvSqrt2 = 0.70710678118654752f;
    return x >= 0.0f ? 0.5f * x * (1.0f + erff(x * kInvSqrt2)) : 0.5f * x * erfcf(-x * kInvSqrt2);
  } else if constexpr (A == Activation::GeluTanh) {
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
  } else if constexpr (A == Activation::Silu) {
    return x / (1.0f + expf(-x));
  } else if constexpr (A == Activation::Tanh) {
    return tanhf(x);
  } else {
    return x > 0.0f ? x : 0.0f;
  }
}

template <Activation A>
__global__ void activation_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = activate<A>(x[i]);
}

template <Activation A>
__global__ void glu_kernel(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = activate<A>(gate[i]) * up[i];
}

__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n, int64_t b_period) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = a[i] + b[i % b_period];
}

__global__ void scale_kernel(const float* x, float* y, int64_t n, float factor) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = x[i] * factor;
}

__global__ void softmax_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  EMBED_SHARED(float, scratch, 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) mx = fmaxf(mx, xr[i]);
    mx = block_max(mx, scratch);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) sum += expf(xr[i] - mx);
    sum = block_sum(sum, scratch);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = expf(xr[i] - mx) / sum;
  }
}

// Calls `launch.template operator()<A>()` with the activation as a template argument.
template <class Launch>
void with_activation(Activation act, Launch&& launch) {
  switch (act) {
    case Activation::GeluErf: launch.template operator()<Activation::GeluErf>(); return;
    case Activation::GeluTanh: launch.template operator()<Activation::GeluTanh>(); return;
    case Activation::Silu: launch.template operator()<Activation::Silu>(); return;
    case Activation::Tanh: launch.template operator()<Activation::Tanh>(); return;
    case Activation::Relu: launch.template operator()<Activation::Relu>(); return;
  }
  EMBED_CHECK(false, "unknown activation");
}

struct ActivationLaunch {
  const ActivationArgs& a;
  cudaStream_t stream;
  template <Activation A>
  void operator()() const {
    const int64_t n = a.x.numel();
    EMBED_LAUNCH(activation_kernel<A>, elementwise_blocks(n, kThreads), kThreads, 0, stream)(a.x.ptr<const float>(), a.y.ptr<float>(), n);
  }
};

struct GluLaunch {
  const GluArgs& a;
  cudaStream_t stream;
  template <Activation A>
  void operator()() const {
    const int64_t n = a.gate.numel();
    EMBED_LAUNCH(glu_kernel<A>, elementwise_blocks(n, kThreads), kThreads, 0, stream)(a.gate.ptr<const float>(),
                                                                                      a.up.ptr<const float>(), a.y.ptr<float>(), n);
  }
};

}  // namespace

void launch_activation(const ActivationArgs& a, cudaStream_t stream) {
  if (a.x.numel() == 0) return;
  with_activation(a.act, ActivationLaunch{a, stream});
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_glu(const GluArgs& a, cudaStream_t stream) {
  if (a.gate.numel() == 0) return;
  with_activation(a.act, GluLaunch{a, stream});
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_add(const AddArgs& a, cudaStream_t stream) {
  const int64_t n = a.a.numel();
  if (n == 0) return;
  const bool broadcast = a.b.rows == 1 && a.a.rows != 1;
  EMBED_LAUNCH(add_kernel, elementwise_blocks(n, kThreads), kThreads, 0, stream)(a.a.ptr<const float>(), a.b.ptr<const float>(),
                                                                                a.y.ptr<float>(), n, broadcast ? a.a.cols : n);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_scale(const ScaleArgs& a, cudaStream_t stream) {
  const int64_t n = a.x.numel();
  if (n == 0) return;
  EMBED_LAUNCH(scale_kernel, elementwise_blocks(n, kThreads), kThreads, 0, stream)(a.x.ptr<const float>(), a.y.ptr<float>(), n,
                                                                                  a.factor);
  EMBED_CUDA_CHECK_LAUNCH();
}

void launch_softmax(const SoftmaxArgs& a, cudaStream_t stream) {
  if (a.x.rows == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.x.rows, 1 << 20));
  const int threads = a.x.cols <= 256 ? 32 : 256;
  EMBED_LAUNCH(softmax_kernel, blocks, threads, 0, stream)(a.x.ptr<const float>(), a.y.ptr<float>(), a.x.rows, a.x.cols);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace embed::cuda

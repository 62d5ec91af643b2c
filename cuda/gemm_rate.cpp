// measure_bf16_gemm_rate: random bf16 operands (never zeros: they run faster than real data),
// three warm-up products, then `reps` products each timed with a pair of events; the median.
#include "cuda/gemm_rate.h"

#include <algorithm>
#include <random>
#include <vector>

#include "cuda/cuda_check.h"
#include "gguf/fp16.h"

namespace embed::cuda {
namespace {

// Owns the buffers, events and handle so that an error thrown halfway leaks nothing.
struct GemmBench {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t handle = nullptr;
  ~GemmBench() {
    if (handle) cublasDestroy(handle);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    for (void* p : {a, b, c})
      if (p) cudaFree(p);
  }
};

}  // namespace

GemmRate measure_bf16_gemm_rate(int device, int size, int reps) {
  EMBED_CUDA_CHECK(cudaSetDevice(device));
  const size_t n = static_cast<size_t>(size) * size;
  std::vector<uint16_t> host(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (uint16_t& v : host) v = f32_to_bf16(dist(rng));
  GemmBench g;
  EMBED_CUDA_CHECK(cudaMalloc(&g.a, n * 2));
  EMBED_CUDA_CHECK(cudaMalloc(&g.b, n * 2));
  EMBED_CUDA_CHECK(cudaMalloc(&g.c, n * 4));
  EMBED_CUDA_CHECK(cudaMemcpy(g.a, host.data(), n * 2, cudaMemcpyHostToDevice));
  std::reverse(host.begin(), host.end());
  EMBED_CUDA_CHECK(cudaMemcpy(g.b, host.data(), n * 2, cudaMemcpyHostToDevice));
  EMBED_CUDA_CHECK(cudaEventCreate(&g.start));
  EMBED_CUDA_CHECK(cudaEventCreate(&g.stop));
  EMBED_CUBLAS_CHECK(cublasCreate(&g.handle));
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    EMBED_CUBLAS_CHECK(cublasGemmEx(g.handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, g.a, CUDA_R_16BF, size, g.b,
                                    CUDA_R_16BF, size, &beta, g.c, CUDA_R_32F, size, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; i++) gemm();
  std::vector<double> ms;
  for (int i = 0; i < reps; i++) {
    EMBED_CUDA_CHECK(cudaEventRecord(g.start));
    gemm();
    EMBED_CUDA_CHECK(cudaEventRecord(g.stop));
    EMBED_CUDA_CHECK(cudaEventSynchronize(g.stop));
    float t = 0;
    EMBED_CUDA_CHECK(cudaEventElapsedTime(&t, g.start, g.stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  GemmRate r;
  r.size = size;
  r.ms = ms[ms.size() / 2];
  r.tflops = 2.0 * size * static_cast<double>(size) * size / (r.ms * 1e-3) / 1e12;
  return r;
}

}  // namespace embed::cuda

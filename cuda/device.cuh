// What every kernel file of cuda/ includes: the CUDA built-ins (or, under EMBED_CUDA_EMULATE, the
// CPU emulator of cuda/emulator.h), launch and shared-memory macros that work in both, half and
// bfloat16 bit conversions, and deterministic warp and block reductions. C++17 only (nvcc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(EMBED_CUDA_EMULATE)
#include "cuda/emulator.h"
#include "gguf/fp16.h"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include "cuda/cuda_check.h"

// EMBED_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...): a kernel launch. Template
// kernels are named with explicit template arguments.
// EMBED_SHARED(type, name, count): a static shared array, `name[i]` in both builds.
// EMBED_DYNAMIC_SHARED(type, name): the launch's dynamic shared memory as a `type*` (128-byte aligned).
#if defined(EMBED_CUDA_EMULATE)
#define EMBED_LAUNCH(kernel, grid, block, shared, stream) ::embed::cuda::emu::Launch{dim3(grid), dim3(block), size_t(shared), kernel}
#define EMBED_SHARED(type, name, count) type* name = static_cast<type*>(::embed::cuda::emu::shared_bytes(sizeof(type) * (count)))
#define EMBED_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::embed::cuda::emu::dynamic_shared_bytes())
#else
#define EMBED_LAUNCH(kernel, grid, block, shared, stream) kernel<<<(grid), (block), (shared), (stream)>>>
#define EMBED_SHARED(type, name, count) __shared__ type name[count]
#define EMBED_DYNAMIC_SHARED(type, name)                         \
  extern __shared__ __align__(128) unsigned char embed_dynamic_shared_[]; \
  type* name = reinterpret_cast<type*>(embed_dynamic_shared_)
#endif

namespace embed::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

// ---- f16 / bf16 as raw 16-bit patterns (what GGUF stores and cuBLAS reads) ----
#if defined(EMBED_CUDA_EMULATE)
inline float half_to_float(uint16_t h) { return f16_to_f32(h); }
inline uint16_t float_to_half(float f) { return f32_to_f16(f); }
inline float bf16_to_float(uint16_t h) { return ::embed::bf16_to_f32(h); }
inline uint16_t float_to_bf16(float f) { return f32_to_bf16(f); }
#else
__device__ __forceinline__ float half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float bf16_to_float(uint16_t h) { return __bfloat162float(__ushort_as_bfloat16(h)); }
__device__ __forceinline__ uint16_t float_to_bf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
#endif

// ---- reductions: fixed butterfly order, so a row's result never depends on anything else ----
// (The emulator computes the same butterfly from one all-gather: same bits, far fewer switches.)
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#if defined(EMBED_CUDA_EMULATE)
  return emu::warp_butterfly(v, [](T a, T b) { return a + b; });
#else
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
#endif
}

template <class T>
__device__ __forceinline__ T warp_max(T v) {
#if defined(EMBED_CUDA_EMULATE)
  return emu::warp_butterfly(v, [](T a, T b) { return std::max(a, b); });
#else
  for (int offset = 16; offset > 0; offset >>= 1) v = std::max(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
#endif
}

// Block-wide sum (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` is a shared array of 32; the leading barrier lets a block call this repeatedly.
template <class T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int n_warps = static_cast<int>(blockDim.x >> 5);
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_sum(lane < n_warps ? scratch[lane] : T(0));
}

template <class T>
__device__ T block_max(T v, T* scratch) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int n_warps = static_cast<int>(blockDim.x >> 5);
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_max(lane < n_warps ? scratch[lane] : -INFINITY);
}

// The shift s that brings values of magnitude <= absmax into the f16 range when they are
// multiplied by 2^-s (exact: a power of two): 0 when absmax fits f16 already (or is not finite:
// inf/NaN then reach the engine's non-finite check), else the smallest s with absmax * 2^-s < 2^15.
__device__ __forceinline__ int half_shift(float absmax) {
  if (!(absmax > 65504.0f) || !(absmax < INFINITY)) return 0;
  int e = 0;
  frexpf(absmax, &e);  // absmax < 2^e
  return e - 15;
}

// Grid size for an elementwise kernel over n items with `threads` per block, grid-stride beyond.
inline unsigned elementwise_blocks(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 65535 * 16));
}

}  // namespace embed::cuda

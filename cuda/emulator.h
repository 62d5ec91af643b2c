// CPU emulator of the CUDA subset that cuda/ uses, so that the very same kernel sources can be
// compiled as C++ (EMBED_CUDA_EMULATE) and checked on machines without a GPU. Test-only: it
// never runs in the product. Each CUDA thread is a fiber; fibers switch only at barriers and warp
// exchanges, in a seeded random order, so a missing barrier shows up as a wrong result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>

// ---- host runtime API: the functions cuda/cuda_backend.cpp calls, served from host memory ----
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
constexpr unsigned cudaStreamNonBlocking = 1;
struct EmulatedStream;
using cudaStream_t = EmulatedStream*;
struct cudaDeviceProp {
  char name[256];
  int major, minor;
  int multiProcessorCount;
  size_t totalGlobalMem;
  size_t sharedMemPerBlockOptin;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaGetLastError();
const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);

namespace embed::cuda::emu {
void set_max_dynamic_shared(const void* kernel, int bytes);
}
template <class F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute, int bytes) {
  ::embed::cuda::emu::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
  return cudaSuccess;
}

// ---- device-code keywords and built-ins ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
// The coordinates of the fiber that is running; the scheduler rewrites them at every switch.
extern dim3 threadIdx, blockIdx, blockDim, gridDim;
constexpr int warpSize = 32;

namespace embed::cuda::emu {

void sync_block();
void sync_warp();
// Publishes 8 bytes of this lane, waits for the warp, returns the 8 bytes of lane `src`.
uint64_t exchange(uint64_t mine, int src);
// Publishes 8 bytes of this lane, waits for the warp, copies all 32 lanes' bytes to `all`.
void warp_allgather(uint64_t mine, uint64_t* all);
// A static __shared__ array of this block: every thread gets the same address because every
// thread makes the same EMBED_SHARED declarations in the same order, at the top of the kernel.
void* shared_bytes(size_t bytes);
void* dynamic_shared_bytes();      // the launch's dynamic shared memory
int lane_id();

// A butterfly reduction (offsets 16, 8, 4, 2, 1, as cuda/device.cuh writes it with shuffles)
// computed from one all-gather: the same operations in the same order, so the same bits, for
// two barriers instead of ten.
template <class T, class Op>
T warp_butterfly(T v, Op op) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0, all[32];
  std::memcpy(&bits, &v, sizeof(T));
  warp_allgather(bits, all);
  T lanes[32];
  for (int i = 0; i < 32; i++) std::memcpy(&lanes[i], &all[i], sizeof(T));
  for (int offset = 16; offset > 0; offset >>= 1) {
    T next[32];
    for (int i = 0; i < 32; i++) next[i] = op(lanes[i], lanes[i ^ offset]);
    std::copy(next, next + 32, lanes);
  }
  return lanes[lane_id()];
}

template <class T>
T shuffle(T v, int src) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(bits, src);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// Runs `body` once per thread of every block of the grid.
void run_grid(dim3 grid, dim3 block, size_t dynamic_shared, const void* kernel, const std::function<void()>& body);

template <class... P>
struct Launch {
  dim3 grid, block;
  size_t shared;
  void (*kernel)(P...);
  template <class... A>
  void operator()(A&&... args) const {
    const std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
    run_grid(grid, block, shared, reinterpret_cast<const void*>(kernel), [&] { std::apply(kernel, params); });
  }
};
template <class... P>
Launch(dim3, dim3, size_t, void (*)(P...)) -> Launch<P...>;

}  // namespace embed::cuda::emu

inline void __syncthreads() { ::embed::cuda::emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::embed::cuda::emu::sync_warp(); }
template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  return ::embed::cuda::emu::shuffle(v, ::embed::cuda::emu::lane_id() ^ lane_mask);
}
template <class T>
T __shfl_sync(unsigned, T v, int src_lane) {
  return ::embed::cuda::emu::shuffle(v, src_lane);
}
// Fibers never interleave between two barriers, so a read-modify-write is atomic here.
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
  const unsigned old = *p;
  if (v > old) *p = v;
  return old;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

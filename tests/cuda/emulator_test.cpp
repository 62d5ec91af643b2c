// The CPU emulator of cuda/emulator.h is trusted only as far as these tests go: barriers,
// shuffles and reductions give CUDA's results, uninitialised shared memory reads as NaN, a
// missing barrier shows up as a wrong result, and a barrier not every thread reaches aborts.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <vector>

#include "cuda/device.cuh"

using namespace embed::cuda;

namespace {

__global__ void block_sum_kernel(float* out) {
  EMBED_SHARED(float, scratch, 32);
  out[blockIdx.x * blockDim.x + threadIdx.x] = block_sum(static_cast<float>(threadIdx.x), scratch);
}

__global__ void warp_ops_kernel(int* sums, int* broadcast, int* maxima) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  sums[threadIdx.x] = warp_sum(lane);
  broadcast[threadIdx.x] = __shfl_sync(kFullMask, static_cast<int>(threadIdx.x) * 10, 7);
  maxima[threadIdx.x] = warp_max((lane * 7) % 32);
}

// Thread t reads what thread t + 1 wrote, with or without the barrier in between.
__global__ void neighbour_kernel(float* out, bool with_barrier) {
  EMBED_SHARED(float, values, 256);
  const int t = static_cast<int>(threadIdx.x);
  values[t] = static_cast<float>(t);
  if (with_barrier) __syncthreads();
  out[t] = values[(t + 1) % 256];
}

__global__ void unwritten_shared_kernel(float* out) {
  EMBED_SHARED(float, values, 64);
  out[threadIdx.x] = values[threadIdx.x];
}

// Half the warp waits in a shuffle the other half never reaches (it waits at the block barrier).
__global__ void divergent_barrier_kernel(float* out) {
  float v = static_cast<float>(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_xor_sync(kFullMask, v, 1);
  __syncthreads();
  out[threadIdx.x] = v;
}

}  // namespace

TEST_CASE("emulated block reductions and warp shuffles give CUDA's results", "[kernels][emulator]") {
  std::vector<float> sums(3 * 256);
  EMBED_LAUNCH(block_sum_kernel, 3, 256, 0, nullptr)(sums.data());
  for (float s : sums) REQUIRE(s == 255.0f * 256.0f / 2.0f);  // 0 + 1 + ... + 255
  std::vector<int> warp_sums(64), broadcast(64), maxima(64);
  EMBED_LAUNCH(warp_ops_kernel, 1, 64, 0, nullptr)(warp_sums.data(), broadcast.data(), maxima.data());
  for (int t = 0; t < 64; t++) {
    CHECK(warp_sums[t] == 496);                         // 0 + 1 + ... + 31
    CHECK(broadcast[t] == (t < 32 ? 70 : 390));         // lane 7 of each warp: threads 7 and 39
    CHECK(maxima[t] == 31);                             // 7 l mod 32 takes every value 0..31
  }
}

TEST_CASE("the emulator exposes a missing barrier and unwritten shared memory", "[kernels][emulator]") {
  std::vector<float> out(256);
  EMBED_LAUNCH(neighbour_kernel, 1, 256, 0, nullptr)(out.data(), true);
  for (int t = 0; t < 256; t++) REQUIRE(out[t] == static_cast<float>((t + 1) % 256));
  // Without the barrier some thread runs before its neighbour has written: it reads poison.
  EMBED_LAUNCH(neighbour_kernel, 1, 256, 0, nullptr)(out.data(), false);
  int wrong = 0;
  for (int t = 0; t < 256; t++) wrong += !(out[t] == static_cast<float>((t + 1) % 256));
  CHECK(wrong > 0);
  std::vector<float> unwritten(64, 0.0f);
  EMBED_LAUNCH(unwritten_shared_kernel, 1, 64, 0, nullptr)(unwritten.data());
  for (float v : unwritten) CHECK(std::isnan(v));
}

TEST_CASE("a barrier or shuffle that not every thread reaches aborts the emulated kernel", "[kernels][emulator]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler: the parent reads the signal
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    std::vector<float> out(32);
    EMBED_LAUNCH(divergent_barrier_kernel, 1, 32, 0, nullptr)(out.data());
    _exit(0);  // not reached: the emulator aborts
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
}

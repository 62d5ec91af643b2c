// This machine's f32 FMA peak per thread count, for the roofline line of docs/benchmarks.md:
// 10 independent FMA chains per thread kept in registers (enough to cover the FMA latency on two
// ports), 8-wide AVX2 and, where the CPU has it, 16-wide AVX-512. Prints one JSON object.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 10;

__attribute__((target("avx2,fma"))) float chains_avx2(long iters) {
  __m256 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm256_set1_ps(1.0f + i * 1e-7f);
  const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < kChains; i++) a[i] = _mm256_fmadd_ps(a[i], b, c);
  float s = 0;
  for (int i = 0; i < kChains; i++) s += _mm256_cvtss_f32(a[i]);
  return s;  // returned so the chains are not optimised away
}

__attribute__((target("avx512f"))) float chains_avx512(long iters) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm512_set1_ps(1.0f + i * 1e-7f);
  const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < kChains; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
  float s = 0;
  for (int i = 0; i < kChains; i++) s += _mm512_reduce_add_ps(a[i]);
  return s;
}

// GFLOP/s of `threads` threads each running `kernel` for `iters` iterations of kChains FMAs.
double measure(float (*kernel)(long), int width, int threads, long iters) {
  std::vector<float> sink(static_cast<size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) pool.emplace_back([&, t] { sink[static_cast<size_t>(t)] = kernel(iters); });
  for (std::thread& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink[0] == 12345.0f) std::printf(" ");  // keeps the results alive
  return 2.0 * width * kChains * static_cast<double>(iters) * threads / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long iters = argc > 2 ? std::atol(argv[2]) : 100000000L;
  if (max_threads < 1 || iters < 1) {
    std::fprintf(stderr, "usage: embed-bench-peak [MAX_THREADS (2)] [ITERATIONS (1e8)]\n");
    return 2;
  }
  __builtin_cpu_init();
  std::string out = "{";
  const bool has512 = __builtin_cpu_supports("avx512f");
  for (int isa = 0; isa < (has512 ? 2 : 1); isa++) {
    out += std::string(isa ? ", " : "") + (isa ? "\"avx512_fma_gflops\": {" : "\"avx2_fma_gflops\": {");
    for (int t = 1; t <= max_threads; t++) {
      // Best of three: the machine is shared, and the peak is what the cores can do unhindered.
      double best = 0;
      for (int rep = 0; rep < 3; rep++)
        best = std::max(best, isa ? measure(chains_avx512, 16, t, iters) : measure(chains_avx2, 8, t, iters));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s\"%d\": %.1f", t > 1 ? ", " : "", t, best);
      out += buf;
    }
    out += "}";
  }
  std::printf("%s}\n", out.c_str());
  return 0;
}

// This machine's arithmetic peaks per thread count, for the roofline columns of docs/benchmarks.md:
// f32 FMA (8-wide AVX2 and, where the CPU has it, 16-wide AVX-512; 10 independent chains per thread
// in registers); where the CPU has them, the AVX-512 dot products without tiles: int8 VNNI
// (vpdpbusd: 64 u8 x s8 products into 16 int32 lanes) and bf16 (vdpbf16ps: 32 bf16 pairs into 16
// f32 lanes), 10 chains each as the FMA; and, where the CPU and the OS allow AMX, the tile units'
// bf16 (tdpbf16ps, f32 accumulate) and int8 (tdpbssd, int32 accumulate) rates on register-resident
// tiles. Prints one JSON object; all threads of a count run at once, best of three.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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
  // Summed through memory: GCC 12 reports _mm512_reduce_add_ps's _mm256_undefined_pd() as used
  // uninitialized (-Wuninitialized false positive, GCC bug 105593).
  float s = 0;
  alignas(64) float lanes[16];
  for (int i = 0; i < kChains; i++) {
    _mm512_store_ps(lanes, a[i]);
    for (float v : lanes) s += v;
  }
  return s;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) float chains_vnni(long iters) {
  __m512i a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm512_set1_epi32(i);
  const __m512i b = _mm512_set1_epi8(1), c = _mm512_set1_epi8(-1);  // each step adds 4 x (1 x -1) = -4 per lane
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < kChains; i++) a[i] = _mm512_dpbusd_epi32(a[i], b, c);
  alignas(64) int32_t lanes[16];
  int32_t s = 0;
  for (int i = 0; i < kChains; i++) {
    _mm512_store_si512(lanes, a[i]);
    for (int32_t v : lanes) s += v;
  }
  return static_cast<float>(s);
}

__attribute__((target("avx512f,avx512bf16"))) float chains_bf16(long iters) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; i++) a[i] = _mm512_set1_ps(1.0f + i * 1e-7f);
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh c = _mm512_cvtne2ps_pbh(_mm512_set1_ps(-1e-3f), _mm512_set1_ps(1e-3f));
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < kChains; i++) a[i] = _mm512_dpbf16_ps(a[i], b, c);
  float s = 0;
  alignas(64) float lanes[16];
  for (int i = 0; i < kChains; i++) {
    _mm512_store_ps(lanes, a[i]);
    for (float v : lanes) s += v;
  }
  return s;
}

// AMX is usable when CPUID reports the tile, bf16 and int8 units (leaf 7: EDX bits 24, 22, 25), the
// OS enabled the tile state in XCR0 (bits 17 and 18), and Linux granted this process the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18; without it the first tile
// instruction raises SIGILL). Asked once, before any thread uses tiles.
__attribute__((target("xsave"))) bool amx_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned amx_bits = (1u << 22) | (1u << 24) | (1u << 25);
  if ((edx & amx_bits) != amx_bits) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;  // OSXSAVE
  const unsigned long long xcr0 = _xgetbv(0);
  if ((xcr0 & (3ull << 17)) != (3ull << 17)) return false;
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// `iters` rounds of four independent tile products (a 2 x 2 block of 16 x 16 accumulators from two
// A tiles and two B tiles, all 16 rows x 64 bytes), bf16 or int8. Returns a stored value so the
// work is kept.
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) float tile_products(bool int8, long iters) {
  TileConfig config;
  for (int t = 0; t < 8; t++) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  // Not _tile_loadconfig: GCC 12 declares that it reads only 8 bytes of the configuration, so the
  // stores of the tile shapes above may be dropped as dead (docs/benchmarks.md, llama.cpp's AMX build).
  asm volatile("ldtilecfg %0" ::"m"(*reinterpret_cast<const char(*)[sizeof(TileConfig)]>(&config)));
  alignas(64) static thread_local uint16_t a[512], b[512];
  alignas(64) static thread_local float c[256];
  for (int i = 0; i < 512; i++) {
    a[i] = 0x3f80;  // bf16 1.0 (int8: bytes 0x80, 0x3f)
    b[i] = 0x3c00;  // a small bf16 value (int8: bytes 0x00, 0x3c)
  }
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  if (int8) {
    for (long k = 0; k < iters; k++) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  } else {
    for (long k = 0; k < iters; k++) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(3, c, 64);
  _tile_release();
  return c[0];
}

float amx_bf16(long iters) { return tile_products(false, iters); }
float amx_int8(long iters) { return tile_products(true, iters); }

// Operations (a multiply-add counts 2) per call iteration of each kernel.
constexpr double kOpsAvx2 = 2.0 * 8 * kChains;
constexpr double kOpsAvx512 = 2.0 * 16 * kChains;
constexpr double kOpsVnni = 2.0 * 64 * kChains;  // 16 lanes x 4 byte products
constexpr double kOpsBf16 = 2.0 * 32 * kChains;  // 16 lanes x 2 bf16 products
constexpr double kOpsAmxBf16 = 4 * 2.0 * 16 * 16 * 32;  // 16x16 outputs, 32 bf16 pairs each, 4 tiles
constexpr double kOpsAmxInt8 = 4 * 2.0 * 16 * 16 * 64;  // 64 int8 products each

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// G(FL)OP/s of `threads` threads each running `kernel` for `iters` iterations at once, by wall
// time, or with `cpu_time` by the slowest thread's own CPU time (on a shared machine: the rate while
// the threads ran, comparable with embed-bench-matmul's "best cpu-s/t" column).
double measure(float (*kernel)(long), double ops_per_iter, int threads, long iters, bool cpu_time) {
  std::vector<float> sink(static_cast<size_t>(threads));
  std::vector<double> cpu(static_cast<size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back([&, t] {
      const double c0 = thread_cpu_seconds();
      sink[static_cast<size_t>(t)] = kernel(iters);
      cpu[static_cast<size_t>(t)] = thread_cpu_seconds() - c0;
    });
  for (std::thread& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double s = cpu_time ? *std::max_element(cpu.begin(), cpu.end()) : wall;
  if (sink[0] == 12345.0f) std::printf(" ");  // keeps the results alive
  return ops_per_iter * static_cast<double>(iters) * threads / s / 1e9;
}

struct Peak {
  const char* key;
  float (*kernel)(long);
  double ops_per_iter;
  long iters_divisor;  // the tile loops do ~100x more work per iteration than the FMA ones
};

}  // namespace

int main(int argc, char** argv) {
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long iters = argc > 2 ? std::atol(argv[2]) : 100000000L;
  const bool cpu_time = argc > 3 && std::string(argv[3]) == "cpu";
  if (max_threads < 1 || iters < 1 || (argc > 3 && !cpu_time) || argc > 4) {
    std::fprintf(stderr, "usage: embed-bench-peak [MAX_THREADS (2)] [ITERATIONS (1e8)] [cpu (rates by CPU time)]\n");
    return 2;
  }
  __builtin_cpu_init();
  std::vector<Peak> peaks = {{"avx2_fma_gflops", chains_avx2, kOpsAvx2, 1}};
  if (__builtin_cpu_supports("avx512f")) peaks.push_back({"avx512_fma_gflops", chains_avx512, kOpsAvx512, 1});
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
    peaks.push_back({"avx512_vnni_gops", chains_vnni, kOpsVnni, 1});
  if (__builtin_cpu_supports("avx512bf16")) peaks.push_back({"avx512_bf16_gflops", chains_bf16, kOpsBf16, 1});
  if (amx_usable()) {
    peaks.push_back({"amx_bf16_gflops", amx_bf16, kOpsAmxBf16, 5});
    peaks.push_back({"amx_int8_gops", amx_int8, kOpsAmxInt8, 5});
  }
  std::string out = "{";
  for (size_t p = 0; p < peaks.size(); p++) {
    out += std::string(p ? ", \"" : "\"") + peaks[p].key + "\": {";
    for (int t = 1; t <= max_threads; t++) {
      // Best of three: the machine is shared, and the peak is what the cores can do unhindered.
      double best = 0;
      for (int rep = 0; rep < 3; rep++)
        best = std::max(best, measure(peaks[p].kernel, peaks[p].ops_per_iter, t, std::max(1L, iters / peaks[p].iters_divisor), cpu_time));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s\"%d\": %.1f", t > 1 ? ", " : "", t, best);
      out += buf;
    }
    out += "}";
  }
  std::printf("%s}\n", out.c_str());
  return 0;
}

// Kernel lab for the CPU matmul: GFLOP/s of y = x . w^T on the shapes of real models, per weight
// dtype and thread count (median of repetitions after a warm-up, by wall time), and the best
// repetition by the process's CPU time per thread (the steadiest figure on a shared machine,
// where other processes only ever make a repetition slower). Not a test.
//   [EMBED_ISA=level] [EMBED_COMPUTE=f32|bf16|int8] embed-bench-matmul [threads] [reps] [filter]
// filter: only the shapes whose name, or the weight types whose name, contains it (e.g. "bge", "f16").
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "gguf/fp16.h"

using namespace embed;

namespace {

std::vector<uint8_t> weights(DType t, int64_t n, int64_t k) {
  std::mt19937 rng(1);
  std::vector<uint8_t> w(dtype_row_bytes(t, k) * n);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  if (t == DType::F32)
    for (size_t i = 0; i < w.size() / 4; i++) reinterpret_cast<float*>(w.data())[i] = (rng() % 1000) / 1000.0f;
  if (t == DType::F16 || t == DType::BF16)
    for (size_t i = 0; i < w.size() / 2; i++) reinterpret_cast<uint16_t*>(w.data())[i] = f32_to_f16((rng() % 1000) / 1000.0f);
  if (t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q5_0)
    for (size_t b = 0; b < w.size(); b += dtype_row_bytes(t, 32)) *reinterpret_cast<uint16_t*>(&w[b]) = f32_to_f16(0.01f);
  if (t == DType::Q4_K || t == DType::Q5_K)
    for (size_t b = 0; b < w.size(); b += dtype_row_bytes(t, 256)) {
      *reinterpret_cast<uint16_t*>(&w[b]) = f32_to_f16(0.01f);
      *reinterpret_cast<uint16_t*>(&w[b + 2]) = f32_to_f16(0.01f);
    }
  if (t == DType::Q6_K)
    for (size_t b = 0; b < w.size(); b += 210) *reinterpret_cast<uint16_t*>(&w[b + 208]) = f32_to_f16(0.01f);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  const std::string filter = argc > 3 ? argv[3] : "";
  BackendOptions o;
  o.threads = threads;
  if (const char* c = std::getenv("EMBED_COMPUTE"); c && std::strcmp(c, "bf16") == 0) o.compute_type = ComputeType::BF16;
  if (const char* c = std::getenv("EMBED_COMPUTE"); c && std::strcmp(c, "int8") == 0) o.compute_type = ComputeType::Int8;
  auto b = create_backend(o);
  std::printf("backend: %s\n", b->name().c_str());
  auto cpu_seconds = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
  };
  struct Shape {
    const char* what;
    int64_t m, n, k;
  };
  const Shape shapes[] = {{"minilm qkvo", 512, 384, 384}, {"minilm ffn_up", 512, 1536, 384}, {"minilm ffn_down", 512, 384, 1536},
                          {"minilm short", 16, 384, 384},  {"gemma ffn_up", 512, 2048, 640},   {"gemma ffn_down", 512, 640, 2048},
                          {"bge-base qkvo", 512, 768, 768}, {"bge-base ffn_up", 512, 3072, 768}, {"bge-base ffn_down", 512, 768, 3072},
                          {"bge-large ffn_up", 512, 4096, 1024},
                          // Small enough (~50-300 us) that the best of many repetitions ran without
                          // being preempted on a shared machine: the kernel's own rate, in cache.
                          {"cache 48x64", 48, 64, 768}, {"cache 96x256", 96, 256, 1024}};
  std::printf("%-16s %-6s %6s %6s %6s %10s %12s\n", "shape", "dtype", "m", "n", "k", "GFLOP/s", "best cpu-s/t");
  for (const Shape& s : shapes)
    for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K, DType::Q5_0, DType::Q6_K}) {
      if (s.k % dtype_block_elems(t)) continue;
      if (!filter.empty() && std::string(s.what).find(filter) == std::string::npos &&
          std::string(dtype_name(t)).find(filter) == std::string::npos)
        continue;
      std::vector<uint8_t> w = weights(t, s.n, s.k);
      std::vector<float> x(static_cast<size_t>(s.m * s.k), 0.5f), y(static_cast<size_t>(s.m * s.n));
      MatmulArgs a;
      a.x = Tensor{x.data(), DType::F32, Device::Cpu, s.m, s.k};
      a.w = b->load_weight(Tensor{w.data(), t, Device::Cpu, s.n, s.k}, WeightUse::Matmul);
      a.y = Tensor{y.data(), DType::F32, Device::Cpu, s.m, s.n};
      b->matmul(a);
      std::vector<double> times, cpu_times;
      for (int r = 0; r < reps; r++) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        b->matmul(a);
        cpu_times.push_back((cpu_seconds() - c0) / threads);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(cpu_times.begin(), cpu_times.end());
      b->release_weight(a.w);
      std::sort(times.begin(), times.end());
      const double flops = 2.0 * s.m * s.n * s.k;
      std::printf("%-16s %-6s %6lld %6lld %6lld %10.1f %12.1f\n", s.what, dtype_name(t), static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), flops / times[times.size() / 2] / 1e9,
                  flops / cpu_times.front() / 1e9);
    }
  return 0;
}

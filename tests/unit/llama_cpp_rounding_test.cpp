// llama.cpp's activation rounding and table GELU (cpu/llama_cpp_rounding.h), against values
// worked out by hand from the rules llama.cpp's CPU backend follows, and the CPU backend's use of
// them when BackendOptions::llama_cpp_rounding is set.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/isa.h"
#include "cpu/llama_cpp_rounding.h"
#include "cpu/ref/ref.h"
#include "engine/backend.h"
#include "gguf/fp16.h"

using namespace embed;
using namespace embed::cpu;

TEST_CASE("Q8_0 rounding: f16 scale max/127, round half to even", "[llama_cpp_rounding]") {
  std::vector<float> x(64, 0.0f), y(64);
  // Block 0: max 127 -> d = 1, so the quants are the values rounded half to even.
  x[0] = 127.0f;
  x[1] = 2.5f;   // -> 2
  x[2] = 3.5f;   // -> 4
  x[3] = -2.5f;  // -> -2
  x[4] = 0.4f;   // -> 0
  // Block 1: max 1 -> d = f16(1/127) = 0.00787353515625 (1/127 is not a half), quants x * 127.
  x[32] = 1.0f;    // 127 -> 0.99993896484375
  x[33] = 0.5f;    // 63.5 -> 64 -> 0.50390625
  x[34] = -0.25f;  // -31.75 -> -32 -> -0.251953125
  round_q8_0(x.data(), 64, y.data());
  CHECK(y[0] == 127.0f);
  CHECK(y[1] == 2.0f);
  CHECK(y[2] == 4.0f);
  CHECK(y[3] == -2.0f);
  CHECK(y[4] == 0.0f);
  CHECK(y[32] == 0.99993896484375f);
  CHECK(y[33] == 0.50390625f);
  CHECK(y[34] == -0.251953125f);
  CHECK(y[35] == 0.0f);
}

TEST_CASE("Q8_K rounding: signed maximum to -127, f32 scale, blocks of 256", "[llama_cpp_rounding]") {
  std::vector<float> x(512, 0.0f), y(512);
  // Block 0: largest magnitude -2 (negative) -> iscale = 63.5, d = 1/63.5.
  x[0] = 1.0f;  // 63.5 -> 64 -> 64/63.5
  x[5] = -2.0f;
  x[6] = 0.5f;  // 31.75 -> 32
  // Block 1: +127 comes first, -127 ties it: the first is the maximum, iscale = -1, d = -1.
  x[256] = 127.0f;
  x[257] = -127.0f;
  x[258] = 2.5f;  // -2.5 -> -2 (half to even) -> 2
  round_q8_k(x.data(), 512, y.data());
  const float d0 = 1.0f / 63.5f;
  CHECK(y[0] == d0 * 64.0f);
  CHECK(y[5] == d0 * -127.0f);
  CHECK(y[6] == d0 * 32.0f);
  CHECK(y[1] == 0.0f);
  CHECK(y[256] == 127.0f);
  CHECK(y[257] == -127.0f);
  CHECK(y[258] == 2.0f);
  CHECK(std::fabs(y[0] - 1.0078740f) < 1e-6f);
  // An all-zero block stays zero.
  std::vector<float> z(256, 0.0f), zy(256, 1.0f);
  round_q8_k(z.data(), 256, zy.data());
  for (float v : zy) CHECK(v == 0.0f);
}

TEST_CASE("16-bit rounding and the per-weight-type dispatch", "[llama_cpp_rounding]") {
  std::vector<float> x(256, 0.0f), y(256);
  x[0] = 1.0001f;                       // nearest half: 1
  x[1] = 1.0f + std::ldexp(1.0f, -8);   // bf16 halfway between 1 and 1 + 2^-7: even -> 1
  x[2] = 1.0f + 3 * std::ldexp(1.0f, -8);  // bf16 halfway: even -> 1 + 2^-6
  llama_cpp_round_activations(DType::F16, x.data(), 256, y.data());
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 1.00390625f);  // a half holds 1 + 2^-8 exactly
  llama_cpp_round_activations(DType::BF16, x.data(), 256, y.data());
  CHECK(y[1] == 1.0f);
  CHECK(y[2] == 1.015625f);
  llama_cpp_round_activations(DType::F32, x.data(), 256, y.data());
  CHECK(y[0] == 1.0001f);
  CHECK_FALSE(llama_cpp_rounds_activations(DType::F32));
  // Q5_0 weights see Q8_0 activations, Q4_K weights Q8_K ones.
  std::vector<float> q8_0(256), q8_k(256);
  round_q8_0(x.data(), 256, q8_0.data());
  round_q8_k(x.data(), 256, q8_k.data());
  llama_cpp_round_activations(DType::Q5_0, x.data(), 256, y.data());
  CHECK(y == q8_0);
  llama_cpp_round_activations(DType::Q4_K, x.data(), 256, y.data());
  CHECK(y == q8_k);
  CHECK(q8_0 != q8_k);
}

TEST_CASE("llama.cpp GELU: tanh form from an f16 table, identity above 10, zero below -10", "[llama_cpp_rounding]") {
  // gelu_tanh(1) = 0.84119199..., nearest half 0.84130859375; 1.0001 rounds to the same input.
  CHECK(llama_cpp_gelu(1.0f) == 0.84130859375f);
  CHECK(llama_cpp_gelu(1.0001f) == 0.84130859375f);
  CHECK(llama_cpp_gelu(-3.0f) == -0.0036373138427734375f);  // -0.00363739208... to a half
  CHECK(llama_cpp_gelu(2.0f) == 1.955078125f);              // 1.95459769...
  CHECK(llama_cpp_gelu(12.25f) == 12.25f);
  CHECK(llama_cpp_gelu(-10.5f) == 0.0f);
}

TEST_CASE("the CPU backend rounds matmul inputs and GELU only when asked", "[llama_cpp_rounding]") {
  const int64_t m = 3, k = 64, n = 5;
  std::vector<float> x(m * k);
  for (int64_t i = 0; i < m * k; i++) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  // Q8_0 weight blocks: an f16 scale, then 32 int8 quants.
  std::vector<uint8_t> wq(dtype_row_bytes(DType::Q8_0, k) * n);
  for (size_t blk = 0; blk < wq.size() / 34; blk++) {
    const uint16_t d = f32_to_f16(0.01f + 0.001f * static_cast<float>(blk));
    std::memcpy(&wq[blk * 34], &d, 2);
    for (int j = 0; j < 32; j++) wq[blk * 34 + 2 + j] = static_cast<uint8_t>(static_cast<int8_t>((static_cast<int>(blk) * 37 + j * 11) % 255 - 127));
  }
  const Tensor w{wq.data(), DType::Q8_0, Device::Cpu, n, k};
  for (bool rounding : {false, true}) {
    BackendOptions o;
    o.threads = 2;
    o.llama_cpp_rounding = rounding;
    // Both sides at an f32-product level (the rounding wrapper never uses the split-bf16 AMX tiles).
    if (cpu::resolve_isa(CpuIsa::Auto) == CpuIsa::Amx) o.cpu_isa = CpuIsa::Avx512;
    auto b = create_backend(o);
    std::vector<float> y(m * n), want(m * n), xr(x);
    if (rounding)
      for (int64_t i = 0; i < m; i++) round_q8_0(x.data() + i * k, k, xr.data() + i * k);
    MatmulArgs a;
    a.x = Tensor{x.data(), DType::F32, Device::Cpu, m, k};
    a.w = b->load_weight(w, WeightUse::Matmul);
    a.y = Tensor{y.data(), DType::F32, Device::Cpu, m, n};
    b->matmul(a);
    MatmulArgs r = a;
    r.x.data = xr.data();
    r.y.data = want.data();
    ref::matmul(r);
    INFO("rounding " << rounding);
    for (int64_t i = 0; i < m * n; i++) CHECK(y[i] == Approx(want[i]).epsilon(1e-5).margin(1e-5));
    // The input itself is left as it was.
    CHECK(x[1] == std::sin(0.37f) * 3.0f);

    std::vector<float> g(x.size());
    ActivationArgs act;
    act.x = a.x;
    act.y = Tensor{g.data(), DType::F32, Device::Cpu, m, k};
    act.act = Activation::GeluErf;
    b->activation(act);
    for (int64_t i = 0; i < m * k; i++) {
      const double exact = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
      if (rounding) CHECK(g[i] == llama_cpp_gelu(x[i]));
      else CHECK(g[i] == Approx(exact).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("llama.cpp rounding is refused on a non-CPU device", "[llama_cpp_rounding]") {
  BackendOptions o;
  o.device = Device::Cuda;
  o.llama_cpp_rounding = true;
  CHECK_THROWS_WITH(create_backend(o), Catch::Contains("CPU backend only"));
}

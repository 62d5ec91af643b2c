// llama.cpp's activation rounding and table GELU (see llama_cpp_rounding.h for the rules).
#include "cpu/llama_cpp_rounding.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gguf/fp16.h"

namespace embed::cpu {

bool llama_cpp_rounds_activations(DType w) { return w != DType::F32 && w != DType::I32; }

void quantize_q8_0(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k; b += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[b + j]));
    // llama.cpp stores d in f16 and multiplies by 127 / max|x| (not 1 / d), rounding to nearest even.
    d[b / 32] = f16_to_f32(f32_to_f16(amax / 127.0f));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; j++) q[b + j] = static_cast<int8_t>(std::nearbyint(x[b + j] * id));
  }
}

void quantize_q8_k(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k; b += 256) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; j++) {
      const float ax = std::fabs(x[b + j]);
      if (ax > amax) {
        amax = ax;
        max = x[b + j];
      }
    }
    if (amax == 0.0f) {
      d[b / 256] = 0.0f;
      for (int j = 0; j < 256; j++) q[b + j] = 0;
      continue;
    }
    // The signed maximum maps to -127, so a block whose largest value is positive is stored negated.
    const float iscale = -127.0f / max;
    d[b / 256] = 1.0f / iscale;
    for (int j = 0; j < 256; j++) q[b + j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * x[b + j])));
  }
}

namespace {
template <int kBlock, void (*Quantize)(const float*, int64_t, int8_t*, float*)>
void round_blocks(const float* x, int64_t k, float* out) {
  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> d(static_cast<size_t>(k / kBlock));
  Quantize(x, k, q.data(), d.data());
  for (int64_t i = 0; i < k; i++) out[i] = d[i / kBlock] * static_cast<float>(q[i]);
}
}  // namespace

void round_q8_0(const float* x, int64_t k, float* out) { round_blocks<32, quantize_q8_0>(x, k, out); }
void round_q8_k(const float* x, int64_t k, float* out) { round_blocks<256, quantize_q8_k>(x, k, out); }

void round_f16(const float* x, int64_t k, float* out) {
  for (int64_t i = 0; i < k; i++) out[i] = f16_to_f32(f32_to_f16(x[i]));
}

void round_bf16(const float* x, int64_t k, float* out) {
  for (int64_t i = 0; i < k; i++) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
}

void llama_cpp_round_activations(DType w, const float* x, int64_t k, float* out) {
  switch (w) {
    case DType::F16: return round_f16(x, k, out);
    case DType::BF16: return round_bf16(x, k, out);
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
      return round_q8_0(x, k, out);
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
      return round_q8_k(x, k, out);
    case DType::F32: case DType::I32:
      break;
  }
  if (out != x)
    for (int64_t i = 0; i < k; i++) out[i] = x[i];
}

namespace {
// gelu_tanh(h) rounded to f16 for every f16 input h, as llama.cpp builds it at start-up (in f32
// arithmetic with its constants).
const std::vector<uint16_t>& gelu_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t i = 0; i < 65536; i++) {
      const float v = f16_to_f32(static_cast<uint16_t>(i));
      const float g = 0.5f * v * (1.0f + std::tanh(0.79788456080286535587989211986876f * v * (1.0f + 0.044715f * v * v)));
      t[i] = f32_to_f16(g);
    }
    return t;
  }();
  return table;
}
}  // namespace

float llama_cpp_gelu(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return f16_to_f32(gelu_table()[f32_to_f16(x)]);
}

}  // namespace embed::cpu

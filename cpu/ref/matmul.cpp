// Reference matmul: each weight row decoded to f32, dot products accumulated in double.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "cpu/ref/ref.h"
#include "gguf/fp16.h"
#include "gguf/quants.h"

namespace embed::cpu::ref {

void matmul(const MatmulArgs& a) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows;
  std::vector<float> wrow(static_cast<size_t>(k));
  const float* x = a.x.ptr<const float>();
  float* y = a.y.ptr<float>();
  for (int64_t j = 0; j < n; j++) {
    const auto* src = static_cast<const char*>(a.w.data) + static_cast<size_t>(j) * a.w.row_bytes();
    gguf::dequantize_row(dtype_to_gguf(a.w.dtype), src, wrow.data(), k);
    const double b = a.bias.empty() ? 0.0 : a.bias.ptr<const float>()[j];
    for (int64_t i = 0; i < m; i++) {
      double acc = b;
      for (int64_t p = 0; p < k; p++) acc += static_cast<double>(x[i * k + p]) * wrow[static_cast<size_t>(p)];
      float& out = y[i * n + j];
      out = static_cast<float>(a.accumulate ? out + acc : acc);
    }
  }
}

namespace {

float flush_denormal(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }
float round_bf16(float v) { return bf16_to_f32(f32_to_bf16(flush_denormal(v))); }

}  // namespace

void matmul_bf16_pairs(const MatmulArgs& a, int64_t k_block) {
  const int64_t m = a.x.rows, k = a.x.cols, n = a.w.rows, kp = (k + 1) / 2 * 2;
  std::vector<float> xr(static_cast<size_t>(m * kp), 0.0f), wr(static_cast<size_t>(kp), 0.0f);
  const float* x = a.x.ptr<const float>();
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) xr[static_cast<size_t>(i * kp + p)] = round_bf16(x[i * k + p]);
  float* y = a.y.ptr<float>();
  for (int64_t j = 0; j < n; j++) {
    gguf::dequantize_row(dtype_to_gguf(a.w.dtype), static_cast<const char*>(a.w.data) + static_cast<size_t>(j) * a.w.row_bytes(),
                         wr.data(), k);
    for (int64_t p = 0; p < k; p++) wr[static_cast<size_t>(p)] = round_bf16(wr[static_cast<size_t>(p)]);
    const float b = a.bias.empty() ? 0.0f : a.bias.ptr<const float>()[j];
    for (int64_t i = 0; i < m; i++) {
      float& out = y[i * n + j];
      out = (a.accumulate ? out : 0.0f) + b;
      const float* xi = xr.data() + i * kp;
      for (int64_t k0 = 0; k0 < kp; k0 += k_block) {
        float s = 0.0f;
        for (int64_t p = k0; p < std::min(kp, k0 + k_block); p += 2) {
          s = flush_denormal(s + xi[p + 1] * wr[static_cast<size_t>(p + 1)]);
          s = flush_denormal(s + xi[p] * wr[static_cast<size_t>(p)]);
        }
        out += s;
      }
    }
  }
}

}  // namespace embed::cpu::ref

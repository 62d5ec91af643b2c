// Reference LayerNorm and RMSNorm (two-pass mean/variance in double).
#include <cmath>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

void layer_norm(const LayerNormArgs& a) {
  const int64_t rows = a.x.rows, cols = a.x.cols;
  const float* w = a.weight.ptr<const float>();
  const float* b = a.bias.empty() ? nullptr : a.bias.ptr<const float>();
  for (int64_t r = 0; r < rows; r++) {
    const float* x = a.x.ptr<const float>() + r * cols;
    float* y = a.y.ptr<float>() + r * cols;
    double mean = 0;
    for (int64_t i = 0; i < cols; i++) mean += x[i];
    mean /= static_cast<double>(cols);
    double var = 0;
    for (int64_t i = 0; i < cols; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(var + a.eps);
    for (int64_t i = 0; i < cols; i++) y[i] = static_cast<float>((x[i] - mean) * inv * w[i] + (b ? b[i] : 0.0));
  }
}

void rms_norm(const RmsNormArgs& a) {
  const int64_t rows = a.x.rows, cols = a.x.cols;
  const float* w = a.weight.ptr<const float>();
  for (int64_t r = 0; r < rows; r++) {
    const float* x = a.x.ptr<const float>() + r * cols;
    float* y = a.y.ptr<float>() + r * cols;
    double ss = 0;
    for (int64_t i = 0; i < cols; i++) ss += static_cast<double>(x[i]) * x[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + a.eps);
    for (int64_t i = 0; i < cols; i++) y[i] = static_cast<float>(x[i] * inv * w[i]);
  }
}

}  // namespace embed::cpu::ref

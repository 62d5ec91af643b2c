// Reference elementwise ops: activations, gated units, add, scale, softmax.
#include <cmath>

#include "cpu/ref/ref.h"

namespace embed::cpu::ref {

double activate(Activation act, double x) {
  switch (act) {
    case Activation::GeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh: {
      const double c = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case Activation::Silu: return x / (1.0 + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
    case Activation::Relu: return x > 0 ? x : 0.0;
  }
  return x;
}

void activation(const ActivationArgs& a) {
  const int64_t n = a.x.numel();
  for (int64_t i = 0; i < n; i++) a.y.ptr<float>()[i] = static_cast<float>(activate(a.act, a.x.ptr<const float>()[i]));
}

void glu(const GluArgs& a) {
  const int64_t n = a.gate.numel();
  for (int64_t i = 0; i < n; i++)
    a.y.ptr<float>()[i] =
        static_cast<float>(activate(a.act, a.gate.ptr<const float>()[i]) * a.up.ptr<const float>()[i]);
}

void add(const AddArgs& a) {
  const int64_t rows = a.a.rows, cols = a.a.cols;
  const bool bcast = a.b.rows == 1 && rows != 1;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      a.y.ptr<float>()[r * cols + c] = a.a.ptr<const float>()[r * cols + c] + a.b.ptr<const float>()[(bcast ? 0 : r) * cols + c];
}

void scale(const ScaleArgs& a) {
  const int64_t n = a.x.numel();
  for (int64_t i = 0; i < n; i++) a.y.ptr<float>()[i] = a.x.ptr<const float>()[i] * a.factor;
}

void softmax(const SoftmaxArgs& a) {
  const int64_t rows = a.x.rows, cols = a.x.cols;
  for (int64_t r = 0; r < rows; r++) {
    const float* x = a.x.ptr<const float>() + r * cols;
    float* y = a.y.ptr<float>() + r * cols;
    double mx = x[0];
    for (int64_t c = 1; c < cols; c++) mx = std::max(mx, static_cast<double>(x[c]));
    double sum = 0;
    for (int64_t c = 0; c < cols; c++) sum += std::exp(x[c] - mx);
    for (int64_t c = 0; c < cols; c++) y[c] = static_cast<float>(std::exp(x[c] - mx) / sum);
  }
}

}  // namespace embed::cpu::ref

// Reference matmul: each weight row decoded to f32, dot products accumulated in double.
#include <vector>

#include "cpu/ref/ref.h"
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

}  // namespace embed::cpu::ref

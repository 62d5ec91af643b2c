// Panel repacking for the AVX2/AVX-512 GEMM: a transpose of 16-row blocks, element bytes copied as stored.
#include "cpu/packed_weight.h"

#include <cstring>

namespace embed::cpu {

PanelWeight pack_panels(const Tensor& w) {
  PanelWeight p;
  p.dtype = w.dtype;
  p.n = w.rows;
  p.k = w.cols;
  p.n_panels = (w.rows + kPanelWidth - 1) / kPanelWidth;
  const size_t eb = p.element_bytes();
  p.data.assign(static_cast<size_t>(p.n_panels) * p.k * kPanelWidth * eb, 0);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t row = 0; row < w.rows; row++) {
    const int64_t panel = row / kPanelWidth, lane = row % kPanelWidth;
    uint8_t* dst = p.data.data() + static_cast<size_t>(panel) * p.k * kPanelWidth * eb + lane * eb;
    const uint8_t* s = src + static_cast<size_t>(row) * p.k * eb;
    for (int64_t kk = 0; kk < p.k; kk++) std::memcpy(dst + kk * kPanelWidth * eb, s + kk * eb, eb);
  }
  return p;
}

}  // namespace embed::cpu

// Panel repacking for the AVX2/AVX-512 GEMM: a transpose of 16-row blocks, element bytes copied as stored.
#include "cpu/packed_weight.h"

#include <cstdint>
#include <cstring>


namespace embed::cpu {

uint8_t* allocate_cache_aligned(std::vector<uint8_t>& data, size_t& start, size_t payload) {
  data.assign(payload + 63, 0);
  start = static_cast<size_t>(-reinterpret_cast<uintptr_t>(data.data()) & 63);
  return data.data() + start;
}

uint8_t* PanelWeight::allocate(size_t payload) { return allocate_cache_aligned(data, start, payload); }

PanelWeight pack_panels(const Tensor& w) {
  PanelWeight p;
  p.dtype = w.dtype;
  p.n = w.rows;
  p.k = w.cols;
  p.n_panels = (w.rows + kPanelWidth - 1) / kPanelWidth;
  const size_t eb = p.element_bytes();
  uint8_t* base = p.allocate(static_cast<size_t>(p.n_panels) * p.k * kPanelWidth * eb);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t row = 0; row < w.rows; row++) {
    const int64_t panel = row / kPanelWidth, lane = row % kPanelWidth;
    uint8_t* dst = base + static_cast<size_t>(panel) * p.k * kPanelWidth * eb + lane * eb;
    const uint8_t* s = src + static_cast<size_t>(row) * p.k * eb;
    for (int64_t kk = 0; kk < p.k; kk++) std::memcpy(dst + kk * kPanelWidth * eb, s + kk * eb, eb);
  }
  return p;
}

}  // namespace embed::cpu

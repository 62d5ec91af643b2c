// Workspace: bump allocation with 256-byte alignment (vector loads, GPU coalescing).
#include "engine/workspace.h"

#include <algorithm>

namespace embed {
namespace {
constexpr size_t kAlign = 256;
size_t aligned(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
}  // namespace

void Workspace::reset() {
  if (peak_ > main_.bytes()) {  // the pass outgrew the buffer (its spills may be freed already)
    spill_.clear();
    main_ = DeviceBuffer();  // free first so the old and new buffers never coexist
    main_ = DeviceBuffer(&b_, peak_ + peak_ / 8);
  }
  offset_ = 0;
  peak_ = 0;
}

void* Workspace::bytes(size_t n) {
  n = aligned(n == 0 ? 1 : n);
  const size_t at = offset_;
  offset_ += n;
  peak_ = std::max(peak_, offset_);
  if (offset_ <= main_.bytes()) return static_cast<char*>(main_.data()) + at;
  spill_.emplace_back(&b_, n);
  return spill_.back().data();
}

Tensor Workspace::f32(int64_t rows, int64_t cols) {
  return Tensor{bytes(static_cast<size_t>(rows * cols) * sizeof(float)), DType::F32, b_.device(), rows, cols};
}

}  // namespace embed

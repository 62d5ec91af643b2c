// Matmul weights repacked once at load for the AVX2 GEMM: 16-row panels stored k-major, so the
// micro-kernel reads one contiguous 16-wide vector per k step. Values keep their stored type
// (f32, or f16/bf16 as raw 16-bit words converted in registers), so the copy costs no more
// memory than the weight itself. Owned by the CpuBackend that loaded it; read-only afterwards.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace embed::cpu {

constexpr int kPanelWidth = 16;

struct PackedWeight {
  DType dtype = DType::F32;          // F32, F16 or BF16
  int64_t n = 0, k = 0;              // rows (outputs) and columns (inputs) of the weight
  int64_t n_panels = 0;
  std::vector<uint8_t> bytes;        // [n_panels][k][16] elements; rows past n are zero

  size_t element_bytes() const { return dtype == DType::F32 ? 4 : 2; }
  // Start of panel p at k index k0.
  const uint8_t* panel(int64_t p, int64_t k0) const {
    return bytes.data() + (static_cast<size_t>(p) * k + k0) * kPanelWidth * element_bytes();
  }
};

// Whether the CPU GEMM can use a packed copy of this weight type.
inline bool packable(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

PackedWeight pack_weight(const Tensor& w);

}  // namespace embed::cpu

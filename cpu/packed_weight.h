// Matmul weights laid out once at load for one kernel level's GEMM. PackedWeight is the common
// base (owned by the CpuBackend that loaded the weight, read-only afterwards; Tensor::packed
// points at it); each level's GEMM only ever sees the kind its own pack function made.
//
// PanelWeight (AVX2 and AVX-512): 16-row panels stored k-major, so the micro-kernel reads one
// contiguous 16-wide vector per k step. Both keep the stored type (f32, or f16/bf16 as raw 16-bit
// words), so the copy costs no more memory than the weight itself; AVX2 converts 16-bit panels in
// registers, AVX-512 in registers for few rows and per 256-deep block into an L1 buffer for many
// (matmul_avx512.cpp).
//
// PairPanelWeight (compute type bf16 on AVX512-BF16, matmul_bf16_avx512.cpp): the same 16-row
// panels, but each k step is a pair (k, k+1) of bf16 values per row, so one 64-byte vector is the
// 16 rows' pairs, the operand vdpbf16ps reads as is. Weights are rounded to bf16 (round to nearest
// even) once here: 2 bytes per weight (k padded to even, n to 16), the size of an f16/bf16 file
// and half the f32 panels of the default AVX-512 path.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace embed::cpu {

// Sizes `data` for `payload` zeroed bytes starting at a 64-byte boundary; sets `start` to that
// boundary's offset and returns it.
uint8_t* allocate_cache_aligned(std::vector<uint8_t>& data, size_t& start, size_t payload);

struct PackedWeight {
  virtual ~PackedWeight() = default;
  virtual size_t bytes() const = 0;
};

constexpr int kPanelWidth = 16;

struct PanelWeight final : PackedWeight {
  DType dtype = DType::F32;          // F32, F16 or BF16
  int64_t n = 0, k = 0;              // rows (outputs) and columns (inputs) of the weight
  int64_t n_panels = 0;
  std::vector<uint8_t> data;         // from data[start]: [n_panels][k][16] elements; rows past n are zero
  size_t start = 0;                  // data + start is 64-byte aligned: a panel row of 16 f32 is one cache line

  size_t bytes() const override { return data.size(); }
  size_t element_bytes() const { return dtype == DType::F32 ? 4 : 2; }
  // Start of panel p at k index k0.
  const uint8_t* panel(int64_t p, int64_t k0) const {
    return data.data() + start + (static_cast<size_t>(p) * k + k0) * kPanelWidth * element_bytes();
  }
  // Sizes `data` for `payload` bytes starting at a 64-byte boundary, zeroed; returns that start.
  uint8_t* allocate(size_t payload);
};

struct PairPanelWeight final : PackedWeight {
  int64_t n = 0, k = 0;              // rows (outputs) and columns (inputs) of the weight
  int64_t k_pairs = 0, n_panels = 0;  // (k + 1) / 2, (n + 15) / 16
  std::vector<uint8_t> data;         // from data[start]: [n_panels][k_pairs][16 rows][2] bf16; padding is zero
  size_t start = 0;                  // data + start is 64-byte aligned: one pair step of a panel is one cache line

  size_t bytes() const override { return data.size(); }
  uint8_t* allocate(size_t payload) { return allocate_cache_aligned(data, start, payload); }
  // Panel p from pair index q0: 16 32-bit units (row r's bf16 pair) per pair.
  const uint32_t* panel(int64_t p, int64_t q0) const {
    return reinterpret_cast<const uint32_t*>(data.data() + start) + (static_cast<size_t>(p) * k_pairs + q0) * kPanelWidth;
  }
};

// Whether the panel GEMM can use a packed copy of this weight type.
inline bool panel_packable(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

PanelWeight pack_panels(const Tensor& w);

// The packed copy of a weight as a kernel of the level that made it sees it.
template <class T>
const T& packed_as(const Tensor& w) {
  return static_cast<const T&>(*static_cast<const PackedWeight*>(w.packed));
}

}  // namespace embed::cpu

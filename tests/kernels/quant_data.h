// Random but valid weight rows of every dtype for kernel tests: random payload bytes with the
// block scale fields overwritten by small finite f16 values, so decoded values are finite.
#pragma once

#include <random>
#include <vector>

#include "engine/tensor.h"
#include "gguf/fp16.h"

namespace embed::test {

inline std::vector<uint8_t> random_rows(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f), scale(0.002f, 0.05f);
  const size_t rb = dtype_row_bytes(t, cols);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  auto put_f16 = [&](size_t at, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(out.data() + at, &h, 2);
  };
  if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
    const int64_t n = rows * cols;
    for (int64_t i = 0; i < n; i++) {
      const float v = val(rng);
      if (t == DType::F32) std::memcpy(out.data() + i * 4, &v, 4);
      else if (t == DType::F16) put_f16(static_cast<size_t>(i) * 2, v);
      else {
        const uint16_t b = f32_to_bf16(v);
        std::memcpy(out.data() + i * 2, &b, 2);
      }
    }
    return out;
  }
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  const int64_t be = dtype_block_elems(t);
  const size_t bb = dtype_row_bytes(t, be);
  const size_t n_blocks = out.size() / bb;
  for (size_t i = 0; i < n_blocks; i++) {
    const size_t at = i * bb;
    switch (t) {
      case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K:
        put_f16(at, scale(rng));
        put_f16(at + 2, scale(rng));
        break;
      case DType::Q6_K: put_f16(at + 208, scale(rng)); break;
      default: put_f16(at, scale(rng)); break;  // Q4_0, Q5_0, Q8_0
    }
  }
  return out;
}

inline const DType kAllWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                        DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

}  // namespace embed::test

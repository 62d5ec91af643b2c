// Tensor views (non-owning, 2-D, row-major, contiguous) and the element types kernels accept.
// A Tensor never owns memory: weights live in the GGUF mapping or in backend buffers, activations
// in a Workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "gguf/types.h"

namespace embed {

// Element types a kernel can be asked to read. Quantized types appear only as matmul weights
// and gather tables; activations are always F32; ids and positions are I32.
enum class DType : uint8_t { F32, F16, BF16, I32, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K };

const char* dtype_name(DType t);
std::optional<DType> dtype_from_gguf(gguf::TensorType t);
gguf::TensorType dtype_to_gguf(DType t);
int64_t dtype_block_elems(DType t);
// Bytes of a row of n elements (n a multiple of the block size).
size_t dtype_row_bytes(DType t, int64_t n);
bool dtype_is_quantized(DType t);

enum class Device : uint8_t { Cpu, Cuda };
const char* device_name(Device d);

// rows x cols, row-major, rows packed back to back. A 1-D vector is rows == 1.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::Cpu;
  int64_t rows = 0;
  int64_t cols = 0;
  // Optional backend-specific copy of the same values in a kernel-friendly layout (CPU: matmul
  // panels, set by Backend::load_weight). Kernels that do not know it read `data`.
  const void* packed = nullptr;

  bool empty() const { return data == nullptr; }
  size_t row_bytes() const { return dtype_row_bytes(dtype, cols); }
  size_t bytes() const { return row_bytes() * static_cast<size_t>(rows); }
  int64_t numel() const { return rows * cols; }
  template <class T> T* ptr() const { return static_cast<T*>(data); }
  // Rows [r0, r0 + n) as a view.
  Tensor slice_rows(int64_t r0, int64_t n) const;
  // The same bytes seen as rows x cols (rows * cols must equal numel()).
  Tensor reshape(int64_t new_rows, int64_t new_cols) const;
  std::string shape_string() const;
};

}  // namespace embed

// DType tables and Tensor view helpers.
#include "engine/tensor.h"

#include "base/error.h"

namespace embed {
namespace {

struct DTypeInfo {
  DType dtype;
  gguf::TensorType gguf_type;
  const char* name;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, gguf::TensorType::F32, "f32"},    {DType::F16, gguf::TensorType::F16, "f16"},
    {DType::BF16, gguf::TensorType::BF16, "bf16"}, {DType::I32, gguf::TensorType::I32, "i32"},
    {DType::Q4_0, gguf::TensorType::Q4_0, "q4_0"}, {DType::Q4_1, gguf::TensorType::Q4_1, "q4_1"},
    {DType::Q5_0, gguf::TensorType::Q5_0, "q5_0"}, {DType::Q5_1, gguf::TensorType::Q5_1, "q5_1"},
    {DType::Q8_0, gguf::TensorType::Q8_0, "q8_0"}, {DType::Q4_K, gguf::TensorType::Q4_K, "q4_k"},
    {DType::Q5_K, gguf::TensorType::Q5_K, "q5_k"}, {DType::Q6_K, gguf::TensorType::Q6_K, "q6_k"},
};

const DTypeInfo& info(DType t) {
  for (const DTypeInfo& i : kDTypes)
    if (i.dtype == t) return i;
  EMBED_CHECK(false, "unknown DType");
  return kDTypes[0];
}

}  // namespace

const char* dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_gguf(gguf::TensorType t) {
  for (const DTypeInfo& i : kDTypes)
    if (i.gguf_type == t) return i.dtype;
  return std::nullopt;
}

gguf::TensorType dtype_to_gguf(DType t) { return info(t).gguf_type; }

int64_t dtype_block_elems(DType t) { return gguf::type_traits(static_cast<uint32_t>(info(t).gguf_type))->block_elems; }

size_t dtype_row_bytes(DType t, int64_t n) { return gguf::row_bytes(info(t).gguf_type, n); }

bool dtype_is_quantized(DType t) { return dtype_block_elems(t) > 1; }

const char* device_name(Device d) { return d == Device::Cpu ? "cpu" : "cuda"; }

Tensor Tensor::slice_rows(int64_t r0, int64_t n) const {
  EMBED_CHECK(r0 >= 0 && n >= 0 && r0 + n <= rows, "slice_rows out of range");
  Tensor t = *this;
  t.data = static_cast<char*>(data) + static_cast<size_t>(r0) * row_bytes();
  t.rows = n;
  return t;
}

Tensor Tensor::reshape(int64_t new_rows, int64_t new_cols) const {
  EMBED_CHECK(new_rows * new_cols == rows * cols, "reshape changes the element count");
  EMBED_CHECK(new_cols % dtype_block_elems(dtype) == 0, "reshape splits a quantization block");
  Tensor t = *this;
  t.rows = new_rows;
  t.cols = new_cols;
  return t;
}

std::string Tensor::shape_string() const {
  return std::string(dtype_name(dtype)) + "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace embed

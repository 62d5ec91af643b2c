// WeightLoader and HParams.
#include "engine/weights.h"

#include <cmath>

#include "gguf/quants.h"

namespace embed {

WeightLoader::WeightLoader(const gguf::File& f, Backend& b) : f_(f), b_(b) {}

WeightLoader::~WeightLoader() {
  for (const Tensor& t : loaded_) b_.release_weight(t);
}

const gguf::TensorInfo& WeightLoader::find(const std::string& name) const {
  const gguf::TensorInfo* t = f_.find_tensor(name);
  if (!t) fail(ErrorKind::Format, f_.path() + ": missing tensor '" + name + "'");
  return *t;
}

Tensor WeightLoader::load(const gguf::TensorInfo& t, int64_t rows, int64_t cols, Op op, int64_t r0, int64_t n) {
  const WeightUse use = op == Op::Matmul ? WeightUse::Matmul : WeightUse::Gather;
  // 2-D expectation {cols, rows} in ggml order; 1-D tensors are {cols} with rows == 1.
  const bool shape_ok = t.ne[0] == cols && t.ne[1] * t.ne[2] * t.ne[3] == rows && t.ne[2] == 1 && t.ne[3] == 1;
  if (!shape_ok)
    fail(ErrorKind::Format, f_.path() + ": tensor '" + t.name + "' has shape " + t.shape_string() + ", the hyperparameters need [" +
                                std::to_string(cols) + (rows > 1 ? ", " + std::to_string(rows) : std::string()) + "]");
  const auto dt = dtype_from_gguf(t.type);
  if (!dt || !b_.supports(op, *dt))
    fail(ErrorKind::Unsupported, f_.path() + ": tensor '" + t.name + "' has type " + gguf::type_name(t.type) + ", which the " +
                                     b_.name() + " backend cannot use for " + op_name(op));
  Tensor host{const_cast<uint8_t*>(t.data), *dt, Device::Cpu, rows, cols};
  const bool slice = n >= 0;
  if (slice) host = host.slice_rows(r0, n);
  Tensor dev = b_.load_weight(host, use);
  if (dev.data != host.data || dev.packed) {
    loaded_.push_back(dev);
    // The backend works from its own copy now (a slice: the other rows may still be loaded).
    if (!slice) f_.release_pages(t.data, t.nbytes);
  }
  return dev;
}

Tensor WeightLoader::matrix(const std::string& name, int64_t out, int64_t in) { return load(find(name), out, in, Op::Matmul); }

Tensor WeightLoader::matrix_rows(const std::string& name, int64_t out, int64_t in, int64_t r0, int64_t n) {
  return load(find(name), out, in, Op::Matmul, r0, n);
}

Tensor WeightLoader::optional_matrix(const std::string& name, int64_t out, int64_t in) {
  return has(name) ? matrix(name, out, in) : Tensor{};
}

Tensor WeightLoader::table(const std::string& name, int64_t rows, int64_t cols) { return load(find(name), rows, cols, Op::Gather); }

Tensor WeightLoader::optional_table(const std::string& name, int64_t rows, int64_t cols) {
  return has(name) ? table(name, rows, cols) : Tensor{};
}

Tensor WeightLoader::vector(const std::string& name, int64_t n) {
  const gguf::TensorInfo& t = find(name);
  if (t.n_elements() != n || t.ne[0] != n)
    fail(ErrorKind::Format, f_.path() + ": tensor '" + name + "' has shape " + t.shape_string() + ", the hyperparameters need [" +
                                std::to_string(n) + "]");
  return f32_weight(t, 1, n);
}

Tensor WeightLoader::f32_weight(const gguf::TensorInfo& t, int64_t rows, int64_t cols) {
  if (!gguf::can_dequantize(t.type))
    fail(ErrorKind::Unsupported, f_.path() + ": tensor '" + t.name + "' has type " + gguf::type_name(t.type) + ", which cannot be decoded");
  Tensor host;
  if (t.type == gguf::TensorType::F32) {
    host = Tensor{const_cast<uint8_t*>(t.data), DType::F32, Device::Cpu, rows, cols};
  } else {
    converted_.emplace_back(new float[static_cast<size_t>(rows * cols)]);
    for (int64_t r = 0; r < rows; r++)
      gguf::dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * gguf::row_bytes(t.type, cols), converted_.back().get() + r * cols, cols);
    host = Tensor{converted_.back().get(), DType::F32, Device::Cpu, rows, cols};
  }
  Tensor dev = b_.load_weight(host, WeightUse::Vector);
  if (dev.data != host.data) loaded_.push_back(dev);
  return dev;
}

Tensor WeightLoader::bias_table(const std::string& name, int64_t rows, int64_t cols) {
  const gguf::TensorInfo& t = find(name);
  if (t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != 1 || t.ne[3] != 1)
    fail(ErrorKind::Format, f_.path() + ": tensor '" + name + "' has shape " + t.shape_string() + ", the hyperparameters need [" +
                                std::to_string(cols) + ", " + std::to_string(rows) + "]");
  return f32_weight(t, rows, cols);
}

Tensor WeightLoader::optional_vector(const std::string& name, int64_t n) { return has(name) ? vector(name, n) : Tensor{}; }

int64_t HParams::checked(const std::string& k, int64_t v, int64_t lo, int64_t hi) const {
  if (v < lo || v > hi)
    fail(ErrorKind::Format, f_.path() + ": metadata '" + k + "' = " + std::to_string(v) + " is outside the supported range [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

int64_t HParams::count(const std::string& suffix, int64_t lo, int64_t hi) const {
  const std::string k = key(suffix);
  const gguf::MetaValue* v = f_.find_value(k);
  if (!v) fail(ErrorKind::Format, f_.path() + ": missing metadata key '" + k + "'");
  if (v->type == gguf::ValueType::ARRAY) {
    // Per-layer values (some converters write arrays): accepted when they are all equal.
    const auto info = f_.find_array(k);
    std::vector<int64_t> arr;
    if (info->elem_type == gguf::ValueType::I32)
      for (int32_t x : f_.get_array<int32_t>(k)) arr.push_back(x);
    else if (info->elem_type == gguf::ValueType::U32)
      for (uint32_t x : f_.get_array<uint32_t>(k)) arr.push_back(x);
    else
      fail(ErrorKind::Format, f_.path() + ": metadata '" + k + "' must be an integer or an array of i32/u32");
    if (arr.empty()) fail(ErrorKind::Format, f_.path() + ": metadata '" + k + "' is an empty array");
    for (int64_t x : arr)
      if (x != arr[0]) fail(ErrorKind::Unsupported, f_.path() + ": metadata '" + k + "' differs between layers, which is not supported");
    return checked(k, arr[0], lo, hi);
  }
  return checked(k, f_.get<int64_t>(k), lo, hi);
}

int64_t HParams::count_or(const std::string& suffix, int64_t fallback, int64_t lo, int64_t hi) const {
  return has(suffix) ? count(suffix, lo, hi) : fallback;
}

float HParams::real(const std::string& suffix) const {
  const float v = f_.get<float>(key(suffix));
  if (!std::isfinite(v)) fail(ErrorKind::Format, f_.path() + ": metadata '" + key(suffix) + "' is not finite");
  return v;
}

float HParams::real_or(const std::string& suffix, float fallback) const { return has(suffix) ? real(suffix) : fallback; }

bool HParams::flag_or(const std::string& suffix, bool fallback) const { return f_.get_or<bool>(key(suffix), fallback); }

}  // namespace embed

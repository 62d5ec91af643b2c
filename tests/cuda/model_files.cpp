// Model files for the CUDA model tests (see model_files.h).
#include "tests/cuda/model_files.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "gguf/file.h"
#include "gguf/fp16.h"
#include "gguf/quants.h"
#include "gguf/writer.h"

namespace embed::test {
namespace {

void copy_array(gguf::Writer& w, const std::string& key, const gguf::ArrayValue& a) {
  auto numbers = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v(a.count);
    if (a.count) std::memcpy(v.data(), a.data, a.count * sizeof(T));
    w.set_array<T>(key, v);
  };
  switch (a.elem_type) {
    case gguf::ValueType::STRING: w.set_string_array(key, std::vector<std::string>(a.strings.begin(), a.strings.end())); return;
    case gguf::ValueType::I32: numbers(int32_t{}); return;
    case gguf::ValueType::U32: numbers(uint32_t{}); return;
    case gguf::ValueType::F32: numbers(float{}); return;
    case gguf::ValueType::I8: numbers(int8_t{}); return;
    case gguf::ValueType::U8: numbers(uint8_t{}); return;
    default: fail(ErrorKind::Unsupported, "write_reencoded: array '" + key + "' has an element type this helper does not copy");
  }
}

void copy_value(gguf::Writer& w, const gguf::KeyValue& kv) {
  const auto& v = kv.value.v;
  switch (kv.value.type) {
    case gguf::ValueType::U8: w.set<uint8_t>(kv.key, static_cast<uint8_t>(std::get<uint64_t>(v))); return;
    case gguf::ValueType::U16: w.set<uint16_t>(kv.key, static_cast<uint16_t>(std::get<uint64_t>(v))); return;
    case gguf::ValueType::U32: w.set<uint32_t>(kv.key, static_cast<uint32_t>(std::get<uint64_t>(v))); return;
    case gguf::ValueType::U64: w.set<uint64_t>(kv.key, std::get<uint64_t>(v)); return;
    case gguf::ValueType::I8: w.set<int8_t>(kv.key, static_cast<int8_t>(std::get<int64_t>(v))); return;
    case gguf::ValueType::I16: w.set<int16_t>(kv.key, static_cast<int16_t>(std::get<int64_t>(v))); return;
    case gguf::ValueType::I32: w.set<int32_t>(kv.key, static_cast<int32_t>(std::get<int64_t>(v))); return;
    case gguf::ValueType::I64: w.set<int64_t>(kv.key, std::get<int64_t>(v)); return;
    case gguf::ValueType::F32: w.set<float>(kv.key, static_cast<float>(std::get<double>(v))); return;
    case gguf::ValueType::F64: w.set<double>(kv.key, std::get<double>(v)); return;
    case gguf::ValueType::BOOL: w.set<bool>(kv.key, std::get<bool>(v)); return;
    case gguf::ValueType::STRING: w.set_string(kv.key, std::string(std::get<std::string_view>(v))); return;
    case gguf::ValueType::ARRAY: copy_array(w, kv.key, std::get<gguf::ArrayValue>(v)); return;
  }
}

// f32 values -> `type` bytes (n a multiple of 32 for Q8_0).
std::vector<uint8_t> encode(const std::vector<float>& x, DType type) {
  std::vector<uint8_t> out;
  auto put16 = [&](uint16_t h) { out.insert(out.end(), {static_cast<uint8_t>(h & 0xFF), static_cast<uint8_t>(h >> 8)}); };
  if (type == DType::F16 || type == DType::BF16) {
    for (float v : x) put16(type == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v));
    return out;
  }
  EMBED_CHECK(type == DType::Q8_0 && x.size() % 32 == 0, "encode: F16, BF16 or Q8_0 rows of whole blocks");
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[b + j]));
    const float d = amax / 127.0f;
    put16(f32_to_f16(d));
    for (size_t j = 0; j < 32; j++) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(d > 0 ? std::lround(x[b + j] / d) : 0)));
  }
  return out;
}

}  // namespace

void write_reencoded(const std::string& src, const std::string& dst, DType type) {
  const gguf::File f = gguf::File::open(src);
  gguf::Writer w(f.alignment());
  for (const gguf::KeyValue& kv : f.metadata()) copy_value(w, kv);
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::vector<int64_t> ne(t.ne, t.ne + std::max<uint32_t>(t.n_dims, 1));
    if (t.n_dims < 2) {
      w.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
      continue;
    }
    std::vector<float> x(static_cast<size_t>(t.n_elements()));
    const size_t rb = gguf::row_bytes(t.type, t.ne[0]);
    for (int64_t r = 0; r < t.n_rows(); r++) gguf::dequantize_row(t.type, t.data + r * rb, x.data() + r * t.ne[0], t.ne[0]);
    w.add_tensor(t.name, dtype_to_gguf(type), ne, encode(x, type));
  }
  w.write_file(dst);
}

std::vector<std::string> fixture_models() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(EMBED_FIXTURES_DIR) / "models";
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& model : std::filesystem::directory_iterator(dir))
    if (model.is_directory())
      for (const auto& file : std::filesystem::directory_iterator(model.path()))
        if (file.path().extension() == ".gguf") out.push_back(file.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> env_models() {
  std::vector<std::string> out;
  for (const char* var : {"EMBED_MINILM_GGUF", "EMBED_GEMMA_GGUF", "EMBED_CUDA_TEST_MODELS"}) {
    const char* value = std::getenv(var);
    if (!value) continue;
    std::stringstream list(value);
    for (std::string path; std::getline(list, path, ':');) {
      if (path.empty()) continue;
      // Named but missing is an error, never a silently smaller test (tests/real_models.h).
      if (!std::filesystem::is_regular_file(path)) throw std::runtime_error(std::string(var) + " names " + path + ", which does not exist");
      out.push_back(path);
    }
  }
  return out;
}

bool weights_all_f32(const std::string& path) {
  const gguf::File f = gguf::File::open(path);
  for (const gguf::TensorInfo& t : f.tensors())
    if (t.n_dims >= 2 && t.type != gguf::TensorType::F32) return false;
  return true;
}

}  // namespace embed::test

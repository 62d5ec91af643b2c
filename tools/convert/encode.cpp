// Tensor encoders of the converter. Compiled with -ffp-contract=off: the Q8_0 scale and
// products must round exactly as gguf-py's numpy float32 operations do.
#include "tools/convert/encode.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "gguf/fp16.h"

namespace embed::convert {
namespace {

bool ends_with(const std::string& s, const char* p) {
  const size_t n = std::strlen(p);
  return s.size() >= n && s.compare(s.size() - n, n, p) == 0;
}

}  // namespace

std::optional<OutType> out_type_from_name(const std::string& name) {
  if (name == "f32") return OutType::F32;
  if (name == "f16") return OutType::F16;
  if (name == "bf16") return OutType::BF16;
  if (name == "q8_0") return OutType::Q8_0;
  return std::nullopt;
}

const char* out_type_name(OutType t) {
  switch (t) {
    case OutType::F32: return "f32";
    case OutType::F16: return "f16";
    case OutType::BF16: return "bf16";
    case OutType::Q8_0: return "q8_0";
  }
  return "?";
}

uint32_t file_type_id(OutType t) {
  switch (t) {
    case OutType::F32: return 0;
    case OutType::F16: return 1;
    case OutType::BF16: return 32;
    case OutType::Q8_0: return 7;
  }
  return 0;
}

gguf::TensorType tensor_type_for(const std::string& name, const std::vector<int64_t>& ne, OutType t) {
  using gguf::TensorType;
  if (ne.size() <= 1 || !ends_with(name, ".weight") || ends_with(name, "_norm.weight") ||
      name == "position_embd.weight" || name == "token_types.weight" || ends_with(name, "attn_rel_b.weight"))
    return TensorType::F32;
  if (name == "token_embd.weight") {
    if (t == OutType::F32) return TensorType::F32;
    return t == OutType::BF16 ? TensorType::BF16 : TensorType::F16;
  }
  switch (t) {
    case OutType::F32: return TensorType::F32;
    case OutType::F16: return TensorType::F16;
    case OutType::BF16: return TensorType::BF16;
    case OutType::Q8_0: return ne[0] % 32 == 0 ? TensorType::Q8_0 : TensorType::F16;
  }
  return TensorType::F32;
}

void quantize_row_q8_0(const float* x, int64_t n, uint8_t* out) {
  for (int64_t b = 0; b < n / 32; b++) {
    const float* v = x + b * 32;
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = std::fmax(amax, std::fabs(v[i]));
    // gguf-py: d = max|x| / 127 and id = 1/d in float32, q = round-half-away(x * id).
    const float d = amax / 127.0f;
    const float id = d == 0.0f ? 0.0f : 1.0f / d;
    uint8_t* block = out + b * 34;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(block, &dh, 2);
    for (int i = 0; i < 32; i++) {
      const float q = std::round(v[i] * id);  // std::round rounds halves away from zero, as np_roundf
      block[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

std::vector<uint8_t> encode_tensor(const std::vector<float>& values, int64_t ne0, gguf::TensorType type) {
  using gguf::TensorType;
  const size_t n = values.size();
  std::vector<uint8_t> out;
  switch (type) {
    case TensorType::F32:
      out.resize(n * 4);
      std::memcpy(out.data(), values.data(), n * 4);
      return out;
    case TensorType::F16:
    case TensorType::BF16:
      out.resize(n * 2);
      for (size_t i = 0; i < n; i++) {
        const uint16_t h = type == TensorType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      return out;
    case TensorType::Q8_0: {
      EMBED_CHECK(ne0 > 0 && ne0 % 32 == 0 && n % static_cast<size_t>(ne0) == 0, "q8_0 rows must be whole blocks");
      const size_t rows = n / static_cast<size_t>(ne0), row_bytes = static_cast<size_t>(ne0) / 32 * 34;
      out.resize(rows * row_bytes);
      for (size_t r = 0; r < rows; r++) quantize_row_q8_0(values.data() + r * ne0, ne0, out.data() + r * row_bytes);
      return out;
    }
    default:
      EMBED_CHECK(false, "encode_tensor: unsupported output type");
  }
  return out;
}

}  // namespace embed::convert

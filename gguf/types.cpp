// Type table for ggml tensor types (ids and sizes as listed by gguf-py's GGML_QUANT_SIZES).
#include "gguf/types.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace embed::gguf {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

constexpr Entry kTypes[] = {
    {0, {"F32", 1, 4}},          {1, {"F16", 1, 2}},          {2, {"Q4_0", 32, 18}},
    {3, {"Q4_1", 32, 20}},       {6, {"Q5_0", 32, 22}},       {7, {"Q5_1", 32, 24}},
    {8, {"Q8_0", 32, 34}},       {9, {"Q8_1", 32, 36}},       {10, {"Q2_K", 256, 84}},
    {11, {"Q3_K", 256, 110}},    {12, {"Q4_K", 256, 144}},    {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},    {15, {"Q8_K", 256, 292}},    {16, {"IQ2_XXS", 256, 66}},
    {17, {"IQ2_XS", 256, 74}},   {18, {"IQ3_XXS", 256, 98}},  {19, {"IQ1_S", 256, 50}},
    {20, {"IQ4_NL", 32, 18}},    {21, {"IQ3_S", 256, 110}},   {22, {"IQ2_S", 256, 82}},
    {23, {"IQ4_XS", 256, 136}},  {24, {"I8", 1, 1}},          {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},         {27, {"I64", 1, 8}},         {28, {"F64", 1, 8}},
    {29, {"IQ1_M", 256, 56}},    {30, {"BF16", 1, 2}},        {34, {"TQ1_0", 256, 54}},
    {35, {"TQ2_0", 256, 66}},    {39, {"MXFP4", 32, 17}},     {40, {"NVFP4", 64, 36}},
    {41, {"Q1_0", 128, 18}},
};

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t id) {
  for (const Entry& e : kTypes)
    if (e.id == id) return e.traits;
  return std::nullopt;
}

bool is_retired_type(uint32_t id) {
  // 4, 5: Q4_2/Q4_3; 31-33: Q4_0_4_4/4_8/8_8; 36-38: IQ4_NL_4_4/4_8/8_8 (removed from ggml).
  return id == 4 || id == 5 || (id >= 31 && id <= 33) || (id >= 36 && id <= 38);
}

const char* type_name(TensorType t) {
  auto tr = type_traits(static_cast<uint32_t>(t));
  return tr ? tr->name : "unknown";
}

bool can_dequantize(TensorType t) {
  switch (t) {
    case TensorType::F32: case TensorType::F16: case TensorType::BF16:
    case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1:
    case TensorType::Q8_0: case TensorType::Q4_K: case TensorType::Q5_K: case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

std::optional<TensorType> type_from_name(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const Entry& e : kTypes)
    if (upper == e.traits.name) return static_cast<TensorType>(e.id);
  return std::nullopt;
}

size_t row_bytes(TensorType t, int64_t n_elems) {
  auto tr = type_traits(static_cast<uint32_t>(t));
  EMBED_CHECK(tr.has_value(), "row_bytes of unknown type");
  EMBED_CHECK(n_elems >= 0 && n_elems % tr->block_elems == 0, "row length not a multiple of the block size");
  return static_cast<size_t>(n_elems / tr->block_elems) * tr->block_bytes;
}

}  // namespace embed::gguf

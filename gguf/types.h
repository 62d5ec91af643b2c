// ggml tensor types as stored in GGUF files: ids, block geometry, names.
// Owns no data and decodes nothing (see quants.h); every size computed from a file goes through
// the checked helpers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace embed::gguf {

// Numeric ids are the on-disk values (ggml.h `enum ggml_type`); do not renumber.
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

struct TypeTraits {
  const char* name;
  uint32_t block_elems;  // elements per block along ne[0]
  uint32_t block_bytes;  // bytes per block
};

// Traits for a type id read from a file, or nullopt when the id is unknown or retired.
std::optional<TypeTraits> type_traits(uint32_t id);
// True for ids that ggml once used and has removed (Q4_2, Q4_3, Q4_0_4_4, ...).
bool is_retired_type(uint32_t id);
const char* type_name(TensorType t);
// Types whose rows this project can decode to f32 (quants.h).
bool can_dequantize(TensorType t);
// Parses "f16", "Q4_K", ... (case-insensitive); nullopt when unknown.
std::optional<TensorType> type_from_name(const std::string& name);

// Bytes for `n_elems` elements of one row of type t; n_elems must be a multiple of the block size.
size_t row_bytes(TensorType t, int64_t n_elems);

}  // namespace embed::gguf

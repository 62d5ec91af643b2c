// Output types of `embed convert` and the encoders from f32: f16 / bf16 (round to nearest
// even) and Q8_0 with gguf-py's exact rounding, plus the per-tensor type rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/types.h"

namespace embed::convert {

enum class OutType { F32, F16, BF16, Q8_0 };
std::optional<OutType> out_type_from_name(const std::string& name);  // "f32", "f16", "bf16", "q8_0"
const char* out_type_name(OutType t);
// llama.cpp `llama_ftype` stored in general.file_type (ALL_F32=0, MOSTLY_F16=1, MOSTLY_Q8_0=7, MOSTLY_BF16=32).
uint32_t file_type_id(OutType t);

// The GGUF type of one tensor (ne in ggml order):
//   1-D tensors, biases, norms, position_embd and token_types stay f32 (as llama.cpp's converter);
//   token_embd is f32 for --type f32, bf16 for bf16, f16 otherwise (also for q8_0: the row gather
//   of an embedding table gains nothing from q8_0);
//   Q8_0 needs ne0 % 32 == 0, otherwise the tensor falls back to f16 (as gguf-py does);
//   everything else gets the requested type.
gguf::TensorType tensor_type_for(const std::string& gguf_name, const std::vector<int64_t>& ne, OutType t);

// Encodes `n` f32 values (rows of ne0 along the contiguous axis) as `type`.
std::vector<uint8_t> encode_tensor(const std::vector<float>& values, int64_t ne0, gguf::TensorType type);

// One row of Q8_0: n % 32 == 0; writes n / 32 blocks of 34 bytes (f16 scale, 32 int8).
// Matches gguf-py quants.Q8_0 (and ggml's quantize_row_q8_0_ref) bit for bit.
void quantize_row_q8_0(const float* x, int64_t n, uint8_t* out);

}  // namespace embed::convert

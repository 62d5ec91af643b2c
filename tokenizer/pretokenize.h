// Pre-tokenizers of byte-level BPE: hand-written scanners equivalent to the regexes of HF's
// tokenizer.json (gpt2, llama3, qwen2) and llama.cpp's "default" regex sequence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace embed::tok {

enum class PreKind { Gpt2, Llama3, Qwen2, Default };

// Maps tokenizer.ggml.pre to a scanner; throws embed::Error(Unsupported) naming the value and the
// supported ones.
PreKind pre_kind_from_name(const std::string& pre);

// Splits valid UTF-8 `text` into pre-tokens, appended as [begin, end) byte ranges. Every byte of
// text belongs to exactly one range, in order.
void pretokenize(PreKind kind, std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>& out);

}  // namespace embed::tok

// The vocabulary read from tokenizer.ggml.* metadata: pieces, scores, token types, merges, special
// ids with the family defaults, and the add_* flags. Shared by every tokenizer algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/file.h"

namespace embed::tok {

// llama.cpp's token types (include/llama.h llama_token_type).
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> pieces;
  std::vector<float> scores;       // empty when the file has none
  std::vector<TokenType> types;    // Normal when the file has none
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;
  std::vector<std::string> merges;  // "left right", rank = index

  int32_t bos = -1, eos = -1, eot = -1, unk = -1, sep = -1, pad = -1, cls = -1, mask = -1;
  bool add_bos = false, add_eos = false, add_sep = false, add_space_prefix = false;
  bool remove_extra_whitespaces = false;
  bool lowercase = true, strip_accents = true;  // WordPiece normalizer
  std::vector<uint8_t> precompiled_charsmap;    // Unigram normalizer
  int64_t pooling_type = -1;                    // <arch>.pooling_type, for the EOS rule
  std::vector<std::string> warnings;            // load-time warnings (ids out of range, ...)

  static Vocab from_gguf(const gguf::File& f);
  int32_t find(std::string_view piece) const {
    auto it = ids.find(piece);
    return it == ids.end() ? -1 : it->second;
  }
  size_t size() const { return pieces.size(); }
};

}  // namespace embed::tok

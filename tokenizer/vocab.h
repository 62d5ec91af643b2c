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

// HF AddedToken attributes of an added token (tokenizer.embed.* metadata, docs/tokenizers.md).
enum AddedFlag : uint8_t {
  kLstrip = 1,       // absorbs the whitespace on its left
  kRstrip = 2,       // absorbs the whitespace on its right
  kSingleWord = 4,   // matched only with no word character on either side
  kNormalized = 8,   // matched in the normalizer's output instead of the raw text
  kAddedOnly = 16,   // not in the model's own vocabulary: the algorithm never produces it
};

// The metadata that carries each flag: a u32 array of token ids (written by tokenizer/hf_import.cpp;
// llama.cpp has no per-token attributes in GGUF and ignores these keys).
struct AddedFlagKey {
  AddedFlag flag;
  const char* key;
};
inline constexpr AddedFlagKey kAddedFlagKeys[] = {
    {kLstrip, "tokenizer.embed.lstrip"},
    {kRstrip, "tokenizer.embed.rstrip"},
    {kSingleWord, "tokenizer.embed.single_word"},
    {kNormalized, "tokenizer.embed.normalized"},
    {kAddedOnly, "tokenizer.embed.added_only"},
};

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
  std::vector<uint8_t> added_flags;  // AddedFlag bits per token (all 0 when the file has none)
  bool has_added_flags = false;      // the file carries tokenizer.embed.* attributes (our converter)

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
  // A piece the tokenization algorithm may produce: not a token that exists only as an added token.
  int32_t find_in_model(std::string_view piece) const {
    const int32_t id = find(piece);
    return id >= 0 && (added_flags[static_cast<size_t>(id)] & kAddedOnly) ? -1 : id;
  }
  // Whether the token is split out of input text (HF's added tokens; llama.cpp's special-token cache).
  bool is_added(int32_t id) const {
    const TokenType t = types[static_cast<size_t>(id)];
    return t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
  }
  size_t size() const { return pieces.size(); }
};

}  // namespace embed::tok

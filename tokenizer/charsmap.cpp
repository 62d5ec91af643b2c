// precompiled_charsmap reader (see charsmap.h). The unit layout follows SentencePiece's Darts
// double array: bit 8 = has leaf, bits 0-7 = label (bit 31 marks a leaf unit), offset in bits
// 10-30 shifted by 8 when bit 9 is set. Every index is bounds-checked: the blob is untrusted.
#include "tokenizer/charsmap.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace embed::tok {
namespace {

inline bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
inline uint32_t value(uint32_t u) { return u & ((1u << 31) - 1); }
inline uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
inline uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

}  // namespace

Charsmap::Charsmap(const std::vector<uint8_t>& blob) {
  if (blob.size() < 4) fail(ErrorKind::Format, "tokenizer.ggml.precompiled_charsmap is shorter than its 4-byte header");
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    fail(ErrorKind::Format, "tokenizer.ggml.precompiled_charsmap: trie size " + std::to_string(trie_bytes) +
                                " does not fit the " + std::to_string(blob.size()) + "-byte blob");
  units_.resize(trie_bytes / 4);
  if (trie_bytes) std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  normalized_.assign(blob.begin() + 4 + trie_bytes, blob.end());
}

std::optional<std::string_view> Charsmap::transform(std::string_view chunk) const {
  if (units_.empty()) return std::nullopt;
  size_t pos = offset(units_[0]);
  for (unsigned char c : chunk) {
    if (c == 0) break;
    pos ^= c;
    if (pos >= units_.size()) return std::nullopt;
    const uint32_t u = units_[pos];
    if (label(u) != c) return std::nullopt;
    pos ^= offset(u);
    if (pos >= units_.size()) return std::nullopt;
    if (has_leaf(u)) {
      const size_t at = value(units_[pos]);
      if (at >= normalized_.size()) return std::nullopt;
      size_t end = at;
      while (end < normalized_.size() && normalized_[end] != 0) ++end;
      return std::string_view(normalized_.data() + at, end - at);
    }
  }
  return std::nullopt;
}

}  // namespace embed::tok

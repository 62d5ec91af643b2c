// SentencePiece's precompiled_charsmap (the Unigram normalizer in XLM-R / T5 vocabularies): a
// double-array trie over UTF-8 byte strings whose values index NUL-terminated replacements.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace embed::tok {

class Charsmap {
 public:
  Charsmap() = default;
  // Parses the blob: u32 trie byte size, the trie's u32 units, then the replacement strings.
  // Throws embed::Error(Format) when sizes disagree.
  explicit Charsmap(const std::vector<uint8_t>& blob);
  bool empty() const { return units_.empty(); }
  // HF's Precompiled::transform: the replacement of the *shortest* key that is a prefix of
  // `chunk`, or nullopt. (It does not require the key to cover the whole chunk.)
  std::optional<std::string_view> transform(std::string_view chunk) const;

 private:
  std::vector<uint32_t> units_;
  std::vector<char> normalized_;
};

}  // namespace embed::tok

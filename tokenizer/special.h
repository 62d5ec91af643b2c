// Finds special-token text inside input (HF's added-token extraction / llama.cpp's partition):
// the leftmost occurrence of any token, the longest one when several start there.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace embed::tok {

class SpecialMatcher {
 public:
  void add(std::string text, int32_t id);
  void finish();  // call once after the last add()
  bool empty() const { return tokens_.empty(); }

  struct Match {
    size_t pos = std::string_view::npos, len = 0;
    int32_t id = -1;
  };
  // The first match at or after `from`; pos == npos when there is none.
  Match find(std::string_view text, size_t from) const;

 private:
  struct Token {
    std::string text;
    int32_t id;
  };
  std::vector<Token> tokens_;           // sorted by first byte, then longest first
  uint32_t bucket_begin_[257] = {};      // tokens_ index range per first byte
};

}  // namespace embed::tok

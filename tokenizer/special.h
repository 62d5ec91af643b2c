// Finds added-token text (special and user-defined tokens) inside input and splits the input
// there, as HF's AddedVocabulary does: leftmost occurrence first, the longest token when several
// start there, each token's single_word / lstrip / rstrip rule applied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace embed::tok {

class AddedTokenMatcher {
 public:
  // `flags` are AddedFlag bits (tokenizer/vocab.h); `special` tokens are left as text by split_special.
  void add(std::string text, int32_t id, uint8_t flags, bool special);
  void finish();  // call once after the last add()
  bool empty() const { return tokens_.empty(); }

  struct Piece {
    size_t begin, end;  // bytes of the text; an lstrip/rstrip token's span includes the whitespace it took
    int32_t id;         // the added token, or -1 for text between tokens
  };
  // Appends the pieces of `text`, in order, covering it (empty text gives no piece).
  void split(std::string_view text, bool split_special, std::vector<Piece>& out) const;

 private:
  struct Token {
    std::string text;
    int32_t id;
    uint8_t flags;
    bool special;
  };
  struct Match {
    size_t pos, len;
    const Token* token;  // nullptr: no match
  };
  Match find(std::string_view text, size_t from) const;

  std::vector<Token> tokens_;        // sorted by first byte, then longest first
  uint32_t bucket_begin_[257] = {};  // tokens_ index range per first byte
};

}  // namespace embed::tok

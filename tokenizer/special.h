// Finds added-token text (special and user-defined tokens) inside input and splits the input
// there, as HF's AddedVocabulary does: leftmost occurrence first, the longest token when several
// start there, each token's single_word / lstrip / rstrip rule applied.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace embed::tok {

class AddedTokenMatcher {
 public:
  // `flags` are AddedFlag bits (tokenizer/vocab.h); `special` tokens can be read as text (below).
  void add(std::string text, int32_t id, uint8_t flags, bool special);
  void finish();  // call once after the last add()
  bool empty() const { return tokens_.empty(); }

  struct Piece {
    size_t begin, end;  // bytes of the text; an lstrip/rstrip token's span includes the whitespace it took
    int32_t id;         // the added token, or -1 for text between tokens
  };
  // Whether the special token found at [begin, end) of the text is read as plain text instead
  // (HF's split_special_tokens, for all or part of the input).
  using SpecialAsText = std::function<bool(size_t begin, size_t end)>;
  // Appends the pieces of `text`, in order, covering it (empty text gives no piece). Special
  // tokens are split out unless `as_text` (may be null) says otherwise.
  void split(std::string_view text, const SpecialAsText* as_text, std::vector<Piece>& out) const;

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

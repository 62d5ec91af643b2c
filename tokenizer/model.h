// Internal interface between the top-level Tokenizer (added tokens, templates, truncation) and
// one tokenization algorithm. A Model sees only user text with no added tokens in it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace embed::tok {

// U+2581, SentencePiece's space and llama.cpp's WordPiece word-start mark.
inline constexpr std::string_view kMetaspace = "\xE2\x96\x81";

// A normalized string that remembers, for each of its bytes, the source bytes it came from.
struct NormString {
  std::string s;
  std::vector<uint32_t> src_begin, src_end;  // per byte of s

  void push(char32_t cp, uint32_t b, uint32_t e) {
    const size_t n0 = s.size();
    append_utf8(s, cp);
    src_begin.resize(s.size(), b);
    src_end.resize(s.size(), e);
    (void)n0;
  }
  void push_bytes(std::string_view bytes, uint32_t b, uint32_t e) {
    s.append(bytes);
    src_begin.resize(s.size(), b);
    src_end.resize(s.size(), e);
  }
  // `text` unchanged, each byte mapped to itself.
  void assign_identity(std::string_view text) {
    s.assign(text);
    src_begin.resize(text.size());
    src_end.resize(text.size());
    for (size_t k = 0; k < text.size(); ++k) src_begin[k] = static_cast<uint32_t>(k), src_end[k] = static_cast<uint32_t>(k + 1);
  }
  void clear() {
    s.clear();
    src_begin.clear();
    src_end.clear();
  }
};

struct TokenSpan {
  int32_t id;
  uint32_t begin, end;  // byte offsets into the text given to Model::encode
};

class Model {
 public:
  virtual ~Model() = default;
  // Tokenizes valid UTF-8 `text` (a run between special tokens). `at_start` is true for the
  // first run of an input and for a run right after a special token (space-prefix rules).
  virtual void encode(std::string_view text, bool at_start, std::vector<TokenSpan>& out) const = 0;
  // The model's normalizer alone (HF's Normalizer step: what comes before pre-tokenization), with
  // source offsets into `text`; added tokens marked `normalized` are matched in its output.
  virtual void normalize(std::string_view text, NormString& out) const = 0;
  // The text a token stands for, for debugging output.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
};

std::unique_ptr<Model> make_wordpiece(const Vocab& v);
std::unique_ptr<Model> make_bpe(const Vocab& v);
std::unique_ptr<Model> make_spm(const Vocab& v);
std::unique_ptr<Model> make_unigram(const Vocab& v);

}  // namespace embed::tok

// WordPiece (BERT) over llama.cpp's vocabulary convention: word-initial pieces carry U+2581,
// continuation pieces are bare. Normalization and word splitting follow HF's BertNormalizer and
// BertPreTokenizer; matching is HF's greedy longest-match with the 100-character word limit.
#include <algorithm>

#include "base/error.h"
#include "tokenizer/model.h"

namespace embed::tok {
namespace {

constexpr size_t kMaxCharsPerWord = 100;  // HF WordPiece max_input_chars_per_word

bool is_bert_punct(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return char_class(c) & kPunct;
}

// How BERT's clean_text and handle_chinese_chars see a code point.
enum class BertChar { Space, Dropped, Cjk, Other };
BertChar bert_char(char32_t cp) {
  const uint16_t cls = char_class(cp);
  if (cp == '\t' || cp == '\n' || cp == '\r' || (cls & kWhitespace)) return BertChar::Space;
  if (cp == 0 || cp == kReplacementChar || (cls & kOther)) return BertChar::Dropped;
  return (cls & kCjk) ? BertChar::Cjk : BertChar::Other;
}

// Calls f(cp, begin, end, kind) for every code point of valid UTF-8 `text` that clean_text keeps.
template <class F>
void for_each_kept_char(std::string_view text, F&& f) {
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const size_t n = decode_utf8(text, i, cp);
    const BertChar kind = bert_char(cp);
    if (kind != BertChar::Dropped) f(cp, static_cast<uint32_t>(i), static_cast<uint32_t>(i + n), kind);
    i += n;
  }
}

class WordPiece final : public Model {
 public:
  explicit WordPiece(const Vocab& v) : v_(v) {
    if (v_.unk < 0) fail(ErrorKind::Format, "WordPiece vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)");
    for (const auto& p : v_.pieces) max_piece_bytes_ = std::max(max_piece_bytes_, p.size());
  }

  void encode(std::string_view text, bool, std::vector<TokenSpan>& out) const override {
    NormString word;
    for_each_kept_char(text, [&](char32_t cp, uint32_t b, uint32_t e, BertChar kind) {
      if (kind != BertChar::Other) flush(word, out);  // whitespace ends a word; an ideograph is one
      if (kind == BertChar::Space) return;
      append_normalized(cp, b, e, word, out);
      if (kind == BertChar::Cjk) flush(word, out);
    });
    flush(word, out);
  }

  // HF BertNormalizer: clean_text, spaces around CJK ideographs, strip_accents, lowercase.
  // Inserted spaces have empty source ranges at the edges of their ideograph.
  void normalize(std::string_view text, NormString& out) const override {
    for_each_kept_char(text, [&](char32_t cp, uint32_t b, uint32_t e, BertChar kind) {
      if (kind == BertChar::Space) return out.push(' ', b, e);
      if (kind == BertChar::Cjk) out.push(' ', b, b);
      char32_t parts[8];
      const int np = fold_accents(cp, parts);
      for (int k = 0; k < np; ++k) push_char(parts[k], b, e, out);
      if (kind == BertChar::Cjk) out.push(' ', e, e);
    });
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= v_.size()) continue;
      const std::string& p = v_.pieces[id];
      if (p.rfind(kMetaspace, 0) == 0) {
        if (!s.empty()) s += ' ';
        s.append(p, 3);
      } else if (v_.types[id] == TokenType::Control) {
        if (!s.empty()) s += ' ';
        s += p;
      } else {
        s += p;
      }
    }
    return s;
  }

 private:
  // Strip accents (NFD, drop Mn) and lowercase as the metadata says; punctuation that results
  // becomes its own word.
  void append_normalized(char32_t cp, uint32_t b, uint32_t e, NormString& word, std::vector<TokenSpan>& out) const {
    char32_t parts[8];
    const int n = fold_accents(cp, parts);
    for (int k = 0; k < n; ++k) {
      const char32_t c = parts[k];
      if (is_bert_punct(c)) {
        flush(word, out);
        push_char(c, b, e, word);
        flush(word, out);
      } else {
        push_char(c, b, e, word);
      }
    }
  }

  // strip_accents: the code points left of cp's NFD after dropping nonspacing marks (or cp itself).
  int fold_accents(char32_t cp, char32_t parts[8]) const {
    if (!v_.strip_accents || cp < 0x80) {
      parts[0] = cp;
      return 1;
    }
    char32_t nfd[8];
    const int n = decompose_nfd(cp, nfd);
    int kept = 0;
    for (int k = 0; k < n; ++k)
      if (!(char_class(nfd[k]) & kMarkNonspacing)) parts[kept++] = nfd[k];
    return kept;
  }

  void push_char(char32_t c, uint32_t b, uint32_t e, NormString& word) const {
    if (!v_.lowercase) return word.push(c, b, e);
    std::string low;
    append_lower(low, c);
    word.push_bytes(low, b, e);
  }

  // Greedy longest-match of one word; the whole word becomes [UNK] when any part cannot be covered.
  void flush(NormString& word, std::vector<TokenSpan>& out) const {
    if (word.s.empty()) return;
    const std::string& w = word.s;
    const uint32_t wb = word.src_begin.front(), we = word.src_end.back();
    size_t n_chars = 0;
    for (size_t k = 0; k < w.size(); k += utf8_len(static_cast<unsigned char>(w[k]))) ++n_chars;
    const size_t first = out.size();
    bool ok = n_chars <= kMaxCharsPerWord;
    std::string key;
    for (size_t start = 0; ok && start < w.size();) {
      int32_t found = -1;
      size_t end = std::min(w.size(), start + max_piece_bytes_);
      while (end > start) {
        while (end < w.size() && (static_cast<unsigned char>(w[end]) & 0xC0) == 0x80) --end;  // char boundary
        if (end <= start) break;
        key.assign(start == 0 ? kMetaspace : std::string_view());
        key.append(w, start, end - start);
        found = v_.find_in_model(key);
        if (found >= 0) break;
        --end;
      }
      if (found < 0) {
        ok = false;
        break;
      }
      out.push_back({found, word.src_begin[start], word.src_end[end - 1]});
      start = end;
    }
    if (!ok) {
      out.resize(first);
      out.push_back({v_.unk, wb, we});
    }
    word.clear();
  }

  const Vocab& v_;
  size_t max_piece_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(const Vocab& v) { return std::make_unique<WordPiece>(v); }

}  // namespace embed::tok

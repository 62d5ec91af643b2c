// Added-token matcher (see special.h): tokens bucketed by first byte, longest first, so a scan
// costs one table read per input byte plus a compare where a token could start. The split rules
// follow HF tokenizers' AddedVocabulary::find_matches (added_vocabulary.rs).
#include "tokenizer/special.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace embed::tok {
namespace {

// The code point that ends at byte `end` (valid UTF-8 is guaranteed by the caller), or 0.
char32_t last_char(std::string_view s, size_t end) {
  if (end == 0) return 0;
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  char32_t cp = 0;
  return decode_utf8(s, b, cp) ? cp : 0;
}

char32_t first_char(std::string_view s, size_t begin) {
  char32_t cp = 0;
  return begin < s.size() && decode_utf8(s, begin, cp) ? cp : 0;
}

size_t utf8_size(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Start of the whitespace run that ends at `end` (HF: \s*$ on the text before the token).
size_t space_run_before(std::string_view s, size_t end) {
  for (char32_t cp; end > 0 && (cp = last_char(s, end)) != 0 && is_space(cp);) end -= utf8_size(cp);
  return end;
}

// End of the whitespace run that starts at `begin` (HF: ^\s* on the text after the token).
size_t space_run_after(std::string_view s, size_t begin) {
  while (begin < s.size()) {
    char32_t cp;
    const size_t n = decode_utf8(s, begin, cp);
    if (n == 0 || !is_space(cp)) break;
    begin += n;
  }
  return begin;
}

}  // namespace

void AddedTokenMatcher::add(std::string text, int32_t id, uint8_t flags, bool special) {
  if (!text.empty()) tokens_.push_back({std::move(text), id, flags, special});
}

void AddedTokenMatcher::finish() {
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Token& a, const Token& b) {
    const auto fa = static_cast<unsigned char>(a.text[0]), fb = static_cast<unsigned char>(b.text[0]);
    return fa != fb ? fa < fb : a.text.size() > b.text.size();
  });
  size_t k = 0;
  for (int b = 0; b <= 256; ++b) {
    while (b < 256 && k < tokens_.size() && static_cast<unsigned char>(tokens_[k].text[0]) < b) ++k;
    bucket_begin_[b] = static_cast<uint32_t>(b == 256 ? tokens_.size() : k);
  }
}

AddedTokenMatcher::Match AddedTokenMatcher::find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return {std::string_view::npos, 0, nullptr};
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto c = static_cast<unsigned char>(text[pos]);
    for (uint32_t k = bucket_begin_[c]; k < bucket_begin_[c + 1]; ++k) {
      const std::string& t = tokens_[k].text;
      if (t.size() <= text.size() - pos && std::memcmp(t.data(), text.data() + pos, t.size()) == 0)
        return {pos, t.size(), &tokens_[k]};
    }
  }
  return {std::string_view::npos, 0, nullptr};
}

void AddedTokenMatcher::split(std::string_view text, const SpecialAsText* as_text, std::vector<Piece>& out) const {
  size_t done = 0;  // end of the last piece emitted
  // Like HF (an Aho-Corasick scan), the search resumes right after a match even when the match is
  // then rejected (single_word, special read as text), and before the whitespace an rstrip token took; a
  // token found inside that whitespace is dropped (HF would emit overlapping pieces).
  for (size_t from = 0;;) {
    const Match m = find(text, from);
    if (!m.token) break;
    from = m.pos + m.len;
    const Token& t = *m.token;
    if (t.special && as_text && (*as_text)(m.pos, m.pos + m.len)) continue;
    size_t begin = m.pos, end = m.pos + m.len;
    if (end <= done) continue;
    if ((t.flags & kSingleWord) && (is_word_char(last_char(text, begin)) || is_word_char(first_char(text, end)))) continue;
    if (t.flags & kLstrip) begin = std::max(space_run_before(text, begin), done);
    if (t.flags & kRstrip) end = space_run_after(text, end);
    begin = std::max(begin, done);  // a token that starts inside the previous one's whitespace
    if (begin > done) out.push_back({done, begin, -1});
    out.push_back({begin, end, t.id});
    done = end;
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

}  // namespace embed::tok

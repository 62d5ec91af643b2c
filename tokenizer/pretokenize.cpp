// Pre-tokenizer scanners (see pretokenize.h). Each scanner returns the length of the match at a
// position, trying the regex alternatives in their written order, as a backtracking regex engine
// would; find_all keeps unmatched gaps as their own pieces (HF Split "Isolated", llama.cpp).
#include "tokenizer/pretokenize.h"

#include "base/error.h"
#include "tokenizer/unicode.h"

namespace embed::tok {
namespace {

struct Cursor {
  std::string_view t;
  // Code point at byte i (valid UTF-8 is guaranteed by the caller); 0 past the end.
  char32_t at(size_t i, size_t* len = nullptr) const {
    if (i >= t.size()) {
      if (len) *len = 0;
      return 0;
    }
    char32_t cp;
    size_t n = decode_utf8(t, i, cp);
    if (n == 0) cp = kReplacementChar, n = 1;
    if (len) *len = n;
    return cp;
  }
};

inline bool is_other(char32_t c) { return !(char_class(c) & (kLetter | kNumber | kWhitespace)); }
inline bool is_nl(char32_t c) { return c == '\r' || c == '\n'; }
inline char32_t ascii_lower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's 't 're 've 'm 'll 'd at i (case-insensitive when `fold`); returns the match length in bytes.
size_t contraction(const Cursor& c, size_t i, bool fold) {
  if (c.at(i) != '\'') return 0;
  char32_t a = c.at(i + 1), b = c.at(i + 2);
  if (fold) a = ascii_lower(a), b = ascii_lower(b);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

template <class Pred> size_t run(const Cursor& c, size_t i, Pred pred, size_t max_chars = SIZE_MAX) {
  size_t j = i, len, n = 0;
  while (n < max_chars && j < c.t.size() && pred(c.at(j, &len))) j += len, ++n;
  return j - i;
}

// Whitespace alternatives shared by the scanners: \s*[\r\n]+ (when `newline_rule`),
// \s+(?!\S), then \s+ (when `plain_run`).
size_t whitespace(const Cursor& c, size_t i, bool newline_rule, bool plain_run) {
  size_t j = i, len, last_nl_end = 0, last_start = i;
  while (j < c.t.size()) {
    const char32_t cp = c.at(j, &len);
    if (!is_space(cp)) break;
    last_start = j;
    j += len;
    if (is_nl(cp)) last_nl_end = j;
  }
  if (j == i) return 0;
  if (newline_rule && last_nl_end) return last_nl_end - i;
  if (j == c.t.size()) return j - i;
  if (last_start > i) return last_start - i;
  return plain_run ? j - i : 0;
}

// (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t match_llama3(const Cursor& c, size_t i, size_t max_digits) {
  if (size_t n = contraction(c, i, true)) return n;
  size_t len;
  const char32_t cp = c.at(i, &len);
  if (is_letter(cp)) return run(c, i, is_letter);
  if (!is_nl(cp) && !is_number(cp)) {
    if (size_t n = run(c, i + len, is_letter)) return len + n;
  }
  if (is_number(cp)) return run(c, i, is_number, max_digits);
  size_t start = i;
  if (cp == ' ' && i + 1 < c.t.size() && is_other(c.at(i + 1))) start = i + 1;
  if (size_t n = run(c, start, is_other)) {
    const size_t j = start + n;
    return j - i + run(c, j, is_nl);
  }
  return whitespace(c, i, true, true);
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)[|\s+]
size_t match_gpt2(const Cursor& c, size_t i, bool plain_run) {
  if (size_t n = contraction(c, i, false)) return n;
  const size_t start = c.at(i) == ' ' ? i + 1 : i;
  const char32_t cp = c.at(start);
  if (start < c.t.size()) {
    if (is_letter(cp)) return start - i + run(c, start, is_letter);
    if (is_number(cp)) return start - i + run(c, start, is_number);
    if (is_other(cp)) return start - i + run(c, start, is_other);
  }
  return whitespace(c, i, false, plain_run);
}

bool is_default_punct(char32_t c) {
  return (char_class(c) & kPunct) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
         c == '|';
}

using Range = std::pair<uint32_t, uint32_t>;

// Regex find-all over [b, e): matches and the gaps between them, in order.
template <class Match> void find_all(const Cursor& c, uint32_t b, uint32_t e, Match match, std::vector<Range>& out) {
  const Cursor sub{c.t.substr(0, e)};
  size_t i = b, gap = b, len;
  while (i < e) {
    const size_t n = match(sub, i);
    if (n == 0) {
      sub.at(i, &len);
      i += len;
      continue;
    }
    if (gap < i) out.emplace_back(static_cast<uint32_t>(gap), static_cast<uint32_t>(i));
    out.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(i + n));
    i += n;
    gap = i;
  }
  if (gap < e) out.emplace_back(static_cast<uint32_t>(gap), e);
}

// llama.cpp's "default": four regexes, each splitting the pieces of the previous one.
void pretokenize_default(const Cursor& c, std::vector<Range>& out) {
  std::vector<Range> cur{{0u, static_cast<uint32_t>(c.t.size())}}, next;
  auto pass = [&](auto match) {
    next.clear();
    for (const Range& r : cur) find_all(c, r.first, r.second, match, next);
    cur.swap(next);
  };
  pass([](const Cursor& s, size_t i) { return run(s, i, is_default_punct); });
  pass([](const Cursor& s, size_t i) { return match_gpt2(s, i, false); });
  pass([](const Cursor& s, size_t i) { return run(s, i, is_number); });
  pass([](const Cursor& s, size_t i) {
    auto digit = [](char32_t d) { return d >= '0' && d <= '9'; };
    return run(s, i, digit, 3) == 3 ? size_t{3} : size_t{0};
  });
  out.insert(out.end(), cur.begin(), cur.end());
}

}  // namespace

PreKind pre_kind_from_name(const std::string& pre) {
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "kormo" || pre == "megrez") return PreKind::Qwen2;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "falcon-h1" ||
      pre == "pixtral" || pre == "midm-2.0" || pre == "lfm2")
    return PreKind::Llama3;
  if (pre == "gpt-2" || pre == "gpt2" || pre == "phi-2" || pre == "jina-es" || pre == "jina-de" || pre == "jina-v2-es" ||
      pre == "jina-v2-de" || pre == "roberta-bpe" || pre == "jina-v1-en" || pre == "jina-v2-code" ||
      pre == "modern-bert")  // llama.cpp's name for ModernBERT's byte-level BPE (GPT-2's regex)
    return PreKind::Gpt2;
  if (pre == "default") return PreKind::Default;
  fail(ErrorKind::Unsupported, "tokenizer.ggml.pre \"" + pre +
                                   "\" is not supported for byte-level BPE; supported: qwen2 (and deepseek-r1-qwen, kormo, "
                                   "megrez), llama3 / llama-bpe (and llama-v3, falcon3, falcon-h1, pixtral, midm-2.0, "
                                   "lfm2), gpt-2 (and phi-2, roberta-bpe, jina-*, modern-bert), default");
}

void pretokenize(PreKind kind, std::string_view text, std::vector<Range>& out) {
  const Cursor c{text};
  const uint32_t n = static_cast<uint32_t>(text.size());
  switch (kind) {
    case PreKind::Qwen2: return find_all(c, 0, n, [](const Cursor& s, size_t i) { return match_llama3(s, i, 1); }, out);
    case PreKind::Llama3: return find_all(c, 0, n, [](const Cursor& s, size_t i) { return match_llama3(s, i, 3); }, out);
    case PreKind::Gpt2: return find_all(c, 0, n, [](const Cursor& s, size_t i) { return match_gpt2(s, i, true); }, out);
    case PreKind::Default: return pretokenize_default(c, out);
  }
}

}  // namespace embed::tok

// Windows and late chunking (engine/long_text.h). A text's encoding is head (the model's leading
// special tokens, then the prompt's tokens) + body (the text's tokens) + tail (a template's rest,
// then trailing special tokens); a window is head + at most max_tokens - head - tail body tokens + tail.
#include "engine/long_text.h"

#include <algorithm>

namespace embed {
namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorKind::InvalidArgument, message); }

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Byte offset of code point `cp` (cp <= the number of code points).
size_t byte_of_code_point(const std::string& s, int64_t cp) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); i++)
    if (!is_continuation(static_cast<unsigned char>(s[i])) && n++ == cp) return i;
  return s.size();
}

bool has_non_space(const std::string& s, size_t a, size_t b) {
  for (size_t i = a; i < b; i++)
    if (!is_space(s[i])) return true;
  return false;
}

// [a, b) without trailing white space, as code points.
CharSpan span_of(const std::string& s, size_t a, size_t b) {
  while (b > a && is_space(s[b - 1])) b--;
  return CharSpan{code_points_before(s, a), code_points_before(s, b)};
}

// Sentence ends: . ! ? followed by white space or the end, their full-width CJK forms, and line
// breaks; the white space after an end belongs to the sentence before it.
void sentence_chunks(const std::string& t, TextChunks& c) {
  size_t start = 0, i = 0;
  auto cut = [&](size_t at) {
    while (at < t.size() && is_space(t[at])) at++;
    if (has_non_space(t, start, at)) {
      c.bytes.emplace_back(start, at);
      start = at;
    } else if (!c.bytes.empty()) {  // white space only: it joins the sentence before
      c.bytes.back().second = at;
      start = at;
    }
    i = std::max(at, i + 1);
  };
  while (i < t.size()) {
    const char ch = t[i];
    if (ch == '\n') cut(i + 1);
    else if ((ch == '.' || ch == '!' || ch == '?') && (i + 1 == t.size() || is_space(t[i + 1]))) cut(i + 1);
    else if (t.compare(i, 3, "\xE3\x80\x82") == 0 || t.compare(i, 3, "\xEF\xBC\x81") == 0 || t.compare(i, 3, "\xEF\xBC\x9F") == 0) cut(i + 3);
    else i++;
  }
  if (start < t.size()) cut(t.size());
  for (const auto& [a, b] : c.bytes) c.spans.push_back(span_of(t, a, b));
}

// The text between separators (a newline next to a separator is part of it), the pieces joined
// by newlines for the model; pieces that are white space only are not chunks.
void separator_chunks(const std::string& t, const std::string& sep, TextChunks& c) {
  size_t pos = 0;
  for (bool first = true;; first = false) {
    const size_t found = t.find(sep, pos);
    size_t a = pos, b = found == std::string::npos ? t.size() : found;
    if (!first && a < b && t[a] == '\r') a++;
    if (!first && a < b && t[a] == '\n') a++;
    if (found != std::string::npos && b > a && t[b - 1] == '\n') b--;
    if (found != std::string::npos && b > a && t[b - 1] == '\r') b--;
    if (has_non_space(t, a, b)) {
      if (!c.text.empty()) {
        c.text += '\n';
        c.bytes.back().second = c.text.size();
      }
      c.bytes.emplace_back(c.text.size(), c.text.size() + (b - a));
      c.text.append(t, a, b - a);
      c.spans.push_back(CharSpan{code_points_before(t, a), code_points_before(t, b)});
    }
    if (found == std::string::npos) break;
    pos = found + sep.size();
  }
}

struct Layout {
  int64_t n = 0, head = 0, tail = 0;
  int64_t body() const { return n - head - tail; }
};

Layout layout_of(const tok::Encoding& e, TextBytes text) {
  Layout l;
  l.n = static_cast<int64_t>(e.size());
  while (l.head < l.n && e.sequence[static_cast<size_t>(l.head)] < 0) l.head++;
  while (l.tail < l.n - l.head && e.sequence[static_cast<size_t>(l.n - 1 - l.tail)] < 0) l.tail++;
  // The prompt's tokens: those that end inside it (one that straddles the join is the text's);
  // the template suffix's: those that start after the text.
  while (text.begin > 0 && l.head < l.n - l.tail && e.end[static_cast<size_t>(l.head)] <= text.begin) l.head++;
  while (l.tail < l.n - l.head && e.sequence[static_cast<size_t>(l.n - 1 - l.tail)] >= 0 &&
         e.begin[static_cast<size_t>(l.n - 1 - l.tail)] >= text.end)
    l.tail++;
  return l;
}

int64_t window_capacity(const ResolvedRequest& r, const Layout& l) {
  const int64_t cap = r.max_tokens - l.head - l.tail;
  if (cap <= r.long_overlap)
    invalid("max_tokens " + std::to_string(r.max_tokens) + " leaves " + std::to_string(cap) + " tokens per window after the " +
            std::to_string(l.head + l.tail) + " prompt and special tokens, not more than the overlap of " + std::to_string(r.long_overlap) +
            " (raise max_tokens or lower long_overlap)");
  return cap;
}

// Body ranges of the windows: every cap - overlap tokens, the last one ending at the body's end
// with cap tokens (it may share more than `overlap` with the one before).
std::vector<std::pair<int64_t, int64_t>> windows_over(int64_t body, int64_t cap, int64_t overlap) {
  std::vector<std::pair<int64_t, int64_t>> w;
  int64_t s = 0;
  for (; s + cap < body; s += cap - overlap) w.emplace_back(s, s + cap);
  w.emplace_back(std::max<int64_t>(0, body - cap), body);
  return w;
}

SequenceInput window_sequence(const tok::Encoding& e, const Layout& l, int64_t a, int64_t b) {
  SequenceInput q;
  auto take = [&](int64_t from, int64_t to) {
    for (auto i = static_cast<size_t>(from); i < static_cast<size_t>(to); i++) {
      q.ids.push_back(e.ids[i]);
      q.type_ids.push_back(e.type_ids.empty() ? 0 : e.type_ids[i]);
      q.special.push_back(e.special[i]);
    }
  };
  take(0, l.head);
  take(l.head + a, l.head + b);
  take(l.n - l.tail, l.n);
  return q;
}

// How much of the text the window [ws, we) shows around body tokens [a, b): the tokens before
// them for a causal model, else the fewer of those before and after.
int64_t context(bool causal, int64_t ws, int64_t we, int64_t a, int64_t b) { return causal ? a - ws : std::min(a - ws, we - b); }

}  // namespace

int64_t code_points_before(const std::string& s, size_t byte) {
  int64_t n = 0;
  for (size_t i = 0; i < byte && i < s.size(); i++) n += !is_continuation(static_cast<unsigned char>(s[i]));
  return n;
}

TextChunks plan_chunks(const std::string& text, const ResolvedRequest& r, const std::vector<CharSpan>* given) {
  TextChunks c;
  if (given && !given->empty()) {
    c.text = text;
    const int64_t n_cp = code_points_before(text, text.size());
    int64_t prev_end = 0;
    for (size_t k = 0; k < given->size(); k++) {
      const CharSpan s = (*given)[k];
      if (s.begin < prev_end || s.begin >= s.end || s.end > n_cp)
        invalid("span " + std::to_string(k) + " [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                ") is not a non-empty span after the previous one within the text's " + std::to_string(n_cp) + " characters");
      c.bytes.emplace_back(byte_of_code_point(text, s.begin), byte_of_code_point(text, s.end));
      c.spans.push_back(s);
      prev_end = s.end;
    }
    return c;
  }
  switch (r.chunk_rule) {
    case ChunkRule::Tokens: c.text = text; return c;
    case ChunkRule::Sentences: c.text = text; sentence_chunks(text, c); break;
    case ChunkRule::Separator: separator_chunks(text, r.chunk_separator, c); break;
  }
  if (c.bytes.empty()) invalid("the text has no chunk: it holds only white space" + std::string(r.chunk_rule == ChunkRule::Separator ? " and separators" : ""));
  return c;
}

void add_windows(const ResolvedRequest& r, size_t input, const tok::Encoding& e, TextBytes text, Tokenized& out) {
  const Layout l = layout_of(e, text);
  for (const auto& [a, b] : windows_over(l.body(), window_capacity(r, l), r.long_overlap)) {
    out.seqs.push_back(window_sequence(e, l, a, b));
    out.parts.push_back({RowPart{static_cast<int64_t>(input), 0, 1, static_cast<float>(b - a)}});
  }
}

void add_late_chunks(const ResolvedRequest& r, size_t input, const tok::Encoding& e, TextBytes text, const TextChunks& chunks,
                     Tokenized& out) {
  const size_t prompt_bytes = text.begin;
  const Layout l = layout_of(e, text);
  const int64_t body = l.body();
  if (body == 0) invalid("the text gives no tokens to chunk");
  // Where a body token is in chunks.text: its first byte that is not white space (a byte-level
  // BPE token carries the space before its word), so a token belongs to the chunk of its word.
  auto offset = [&](int64_t t) {
    const size_t i = static_cast<size_t>(l.head + t);
    size_t b = e.begin[i] > prompt_bytes ? e.begin[i] - prompt_bytes : 0;
    const size_t end = e.end[i] > prompt_bytes ? e.end[i] - prompt_bytes : 0;
    while (b < end && b < chunks.text.size() && is_space(chunks.text[b])) b++;
    return b;
  };
  // Each chunk's body tokens [first, last) and its span.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<CharSpan> spans;
  if (chunks.bytes.empty()) {  // every chunk_tokens tokens
    for (int64_t a = 0; a < body; a += r.chunk_tokens) {
      const int64_t b = std::min(body, a + r.chunk_tokens);
      ranges.emplace_back(a, b);
      const size_t end = e.end[static_cast<size_t>(l.head + b - 1)];
      spans.push_back(CharSpan{code_points_before(chunks.text, offset(a)),
                               code_points_before(chunks.text, end > prompt_bytes ? end - prompt_bytes : 0)});
    }
  } else {
    spans = chunks.spans;
    ranges.assign(chunks.bytes.size(), {-1, -1});
    size_t k = 0;
    for (int64_t t = 0; t < body; t++) {
      const size_t o = offset(t);
      while (k < chunks.bytes.size() && o >= chunks.bytes[k].second) k++;
      if (k == chunks.bytes.size()) break;
      if (o < chunks.bytes[k].first) continue;  // between two given spans
      if (ranges[k].first < 0) ranges[k].first = t;
      ranges[k].second = t + 1;
    }
    for (size_t c = 0; c < ranges.size(); c++)
      if (ranges[c].first < 0)
        invalid("chunk " + std::to_string(c) + " (characters " + std::to_string(spans[c].begin) + " to " + std::to_string(spans[c].end) +
                ") holds no token");
  }
  const int64_t row0 = out.n_rows;
  out.n_rows += static_cast<int64_t>(ranges.size());
  if (out.row_offsets.empty()) out.row_offsets.push_back(0);
  out.row_offsets.push_back(out.n_rows);
  out.spans.insert(out.spans.end(), spans.begin(), spans.end());
  // One sequence when the text fits, else windows; each chunk pooled from the window that shows
  // the most text around it, or token by token when no window holds all of it.
  const std::vector<std::pair<int64_t, int64_t>> wins =
      l.n <= r.max_tokens ? std::vector<std::pair<int64_t, int64_t>>{{0, body}} : windows_over(body, window_capacity(r, l), r.long_overlap);
  std::vector<std::vector<RowPart>> parts(wins.size());
  auto add = [&](size_t w, int64_t row, int64_t a, int64_t b) {
    parts[w].push_back(RowPart{row, static_cast<int32_t>(l.head + a - wins[w].first), static_cast<int32_t>(l.head + b - wins[w].first), 1.0f});
  };
  auto best_window = [&](int64_t a, int64_t b) {
    size_t best = wins.size();
    for (size_t w = 0; w < wins.size(); w++)
      if (wins[w].first <= a && b <= wins[w].second &&
          (best == wins.size() || context(r.causal, wins[w].first, wins[w].second, a, b) >
                                      context(r.causal, wins[best].first, wins[best].second, a, b)))
        best = w;
    return best;
  };
  for (size_t c = 0; c < ranges.size(); c++) {
    const auto [a, b] = ranges[c];
    const int64_t row = row0 + static_cast<int64_t>(c);
    if (const size_t w = best_window(a, b); w < wins.size()) {
      add(w, row, a, b);
      continue;
    }
    for (int64_t t = a; t < b;) {  // token by token, runs of tokens sharing a window in one part
      const size_t w = best_window(t, t + 1);
      int64_t u = t + 1;
      while (u < b && best_window(u, u + 1) == w) u++;
      add(w, row, t, u);
      t = u;
    }
  }
  for (size_t w = 0; w < wins.size(); w++) {
    if (parts[w].empty()) continue;  // a window no chunk is pooled from
    out.seqs.push_back(window_sequence(e, l, wins[w].first, wins[w].second));
    out.parts.push_back(std::move(parts[w]));
  }
}

}  // namespace embed

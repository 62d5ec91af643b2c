// Byte-level BPE (GPT-2 style vocabularies: Qwen2/Qwen3, Llama 3, GPT-2): NFC where the family's
// HF tokenizer applies it, a pre-tokenizer scanner, then merges by rank (lowest first, leftmost on
// ties) over the byte-level symbols of each pre-token, as HF's BPE model and llama.cpp both do.
#include <algorithm>
#include <array>
#include <queue>
#include <unordered_map>

#include "base/error.h"
#include "tokenizer/model.h"
#include "tokenizer/pretokenize.h"

namespace embed::tok {
namespace {

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest map to U+0100 upward.
std::array<char32_t, 256> byte_to_char() {
  std::array<char32_t, 256> m{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    m[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return m;
}

// Qwen2's HF tokenizer.json has an NFC normalizer; llama3 and gpt-2 have none.
bool family_uses_nfc(PreKind k) { return k == PreKind::Qwen2; }
// Llama 3's tokenizer.json sets ignore_merges: a pre-token found whole in the vocabulary is kept.
bool family_ignores_merges(PreKind k) { return k == PreKind::Llama3; }

// NFC of `text` into `out` (with source offsets); false when the text is already NFC, in which
// case `out` is left empty. Runs of a starter and the code points that may combine with it are
// normalized together; code points that NFC leaves alone are copied.
bool nfc_normalize(std::string_view text, NormString& out) {
  size_t i = 0;
  bool trivial = true;
  while (i < text.size() && trivial) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    const size_t n = decode_utf8(text, i, cp);
    const uint16_t cls = char_class(cp);
    trivial = (cls & kNfcTrivial) && !(cls & kCombines);
    i += n;
  }
  if (trivial) return false;
  out.clear();
  i = 0;
  while (i < text.size()) {
    char32_t cp;
    size_t n = decode_utf8(text, i, cp);
    size_t j = i + n;
    bool simple = (char_class(cp) & kNfcTrivial) != 0;
    while (j < text.size()) {
      char32_t next;
      const size_t m = decode_utf8(text, j, next);
      if (!(char_class(next) & kCombines)) break;
      simple = false;
      j += m;
    }
    const std::string_view unit = text.substr(i, j - i);
    out.push_bytes(simple ? std::string(unit) : nfc(unit), static_cast<uint32_t>(i), static_cast<uint32_t>(j));
    if (simple) {  // exact per-byte offsets for a single unchanged code point
      for (size_t k = 0; k < unit.size(); ++k) {
        out.src_begin[out.s.size() - unit.size() + k] = static_cast<uint32_t>(i);
        out.src_end[out.s.size() - unit.size() + k] = static_cast<uint32_t>(j);
      }
    }
    i = j;
  }
  return true;
}

class Bpe final : public Model {
 public:
  explicit Bpe(const Vocab& v) : v_(v), pre_(pre_kind_from_name(v.pre.empty() ? "default" : v.pre)) {
    const auto chars = byte_to_char();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      append_utf8(s, chars[b]);
      byte_char_[b] = s;
      byte_id_[b] = v_.find_in_model(s);
    }
    merges_.reserve(v_.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < v_.merges.size(); ++rank) {
      const std::string& m = v_.merges[rank];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) fail(ErrorKind::Format, "tokenizer.ggml.merges[" + std::to_string(rank) + "] \"" + m + "\" has no space");
      const int32_t a = v_.find_in_model(std::string_view(m).substr(0, sp)), b = v_.find_in_model(std::string_view(m).substr(sp + 1));
      joined.assign(m, 0, sp);
      joined.append(m, sp + 1);
      const int32_t ab = v_.find_in_model(joined);
      if (a < 0 || b < 0 || ab < 0) continue;  // a merge whose parts are not tokens can never apply
      merges_.try_emplace(key(a, b), static_cast<int32_t>(rank), ab);
    }
  }

  void encode(std::string_view text, bool, std::vector<TokenSpan>& out) const override {
    NormString norm;
    const bool changed = family_uses_nfc(pre_) && nfc_normalize(text, norm);
    const std::string_view t = changed ? std::string_view(norm.s) : text;
    std::vector<std::pair<uint32_t, uint32_t>> words;
    pretokenize(pre_, t, words);
    const size_t first = out.size();
    for (const auto& [b, e] : words) encode_word(t.substr(b, e - b), b, out);
    if (changed)
      for (size_t k = first; k < out.size(); ++k) {
        out[k].begin = norm.src_begin[out[k].begin];
        out[k].end = norm.src_end[out[k].end - 1];
      }
  }

  void normalize(std::string_view text, NormString& out) const override {
    if (!(family_uses_nfc(pre_) && nfc_normalize(text, out))) out.assign_identity(text);
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::unordered_map<char32_t, char> rev;
    const auto chars = byte_to_char();
    for (int b = 0; b < 256; ++b) rev[chars[b]] = static_cast<char>(b);
    std::string s;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= v_.size()) continue;
      const std::string& p = v_.pieces[id];
      if (v_.types[id] == TokenType::Control || v_.types[id] == TokenType::UserDefined) {
        s += p;
        continue;
      }
      for (size_t i = 0; i < p.size();) {
        char32_t cp;
        size_t n = decode_utf8(p, i, cp);
        if (n == 0) n = 1, cp = kReplacementChar;
        auto it = rev.find(cp);
        if (it != rev.end()) s += it->second;
        else s.append(p, i, n);
        i += n;
      }
    }
    return s;
  }

 private:
  static uint64_t key(int32_t a, int32_t b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

  struct Symbol {
    int32_t id;
    uint32_t begin, end;  // bytes of the word
    int32_t prev, next;   // linked list; -1 ends
  };

  void encode_word(std::string_view w, uint32_t base, std::vector<TokenSpan>& out) const {
    if (family_ignores_merges(pre_)) {
      std::string whole;
      for (unsigned char b : w) whole += byte_char_[b];
      if (int32_t id = v_.find_in_model(whole); id >= 0) {
        out.push_back({id, base, base + static_cast<uint32_t>(w.size())});
        return;
      }
    }
    thread_local std::vector<Symbol> sym;
    sym.clear();
    for (size_t i = 0; i < w.size(); ++i) {
      const int32_t id = byte_id_[static_cast<unsigned char>(w[i])];
      if (id < 0)
        fail(ErrorKind::Format, "byte-level vocabulary lacks the token for byte " + std::to_string(static_cast<unsigned char>(w[i])));
      sym.push_back({id, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1), static_cast<int32_t>(i) - 1,
                     i + 1 < w.size() ? static_cast<int32_t>(i + 1) : -1});
    }
    merge_all(sym);
    for (int32_t k = sym.empty() ? -1 : 0; k >= 0; k = sym[k].next) out.push_back({sym[k].id, base + sym[k].begin, base + sym[k].end});
  }

  // Lowest rank first, leftmost on ties; stale queue entries are skipped when popped.
  void merge_all(std::vector<Symbol>& sym) const {
    struct Cand {
      int32_t rank, left, right_id, merged;
      bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    thread_local std::vector<Cand> heap_store;
    heap_store.clear();
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>{}, std::move(heap_store));
    auto push = [&](int32_t l) {
      const int32_t r = sym[l].next;
      if (l < 0 || r < 0) return;
      auto it = merges_.find(key(sym[l].id, sym[r].id));
      if (it != merges_.end()) heap.push({it->second.first, l, sym[r].id, it->second.second});
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push(i);
    while (!heap.empty()) {
      const Cand c = heap.top();
      heap.pop();
      Symbol& l = sym[c.left];
      if (l.id < 0 || l.next < 0) continue;
      Symbol& r = sym[l.next];
      auto it = merges_.find(key(l.id, r.id));
      if (it == merges_.end() || it->second.first != c.rank || r.id != c.right_id) continue;
      l.id = c.merged;
      l.end = r.end;
      const int32_t rn = r.next;
      r.id = -1;
      l.next = rn;
      if (rn >= 0) sym[rn].prev = c.left;
      if (l.prev >= 0) push(l.prev);
      push(c.left);
    }
  }

  const Vocab& v_;
  PreKind pre_;
  std::array<std::string, 256> byte_char_;
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (a,b) -> (rank, merged id)
};

}  // namespace

std::unique_ptr<Model> make_bpe(const Vocab& v) { return std::make_unique<Bpe>(v); }

}  // namespace embed::tok

// SentencePiece BPE (tokenizer.ggml.model "llama": Llama 2, Gemma) as llama.cpp runs it: spaces
// become U+2581 (with an optional space prefix), then adjacent symbols are merged by the score of
// the merged piece (highest first, leftmost on ties); symbols left outside the vocabulary fall
// back to <0xNN> byte tokens.
#include <cstdio>
#include <queue>
#include <string>

#include "base/error.h"
#include "tokenizer/model.h"

namespace embed::tok {
namespace {


class Spm final : public Model {
 public:
  explicit Spm(const Vocab& v) : v_(v) {
    if (v_.scores.size() != v_.size()) fail(ErrorKind::Format, "SentencePiece vocabulary has no tokenizer.ggml.scores");
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      byte_id_[b] = v_.find_in_model(buf);
    }
  }

  void encode(std::string_view text, bool at_start, std::vector<TokenSpan>& out) const override {
    // Escape: ' ' -> U+2581, remembering the source byte of every escaped byte.
    NormString esc;
    if (v_.add_space_prefix && at_start) esc.push_bytes(kMetaspace, 0, 0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == ' ') esc.push_bytes(kMetaspace, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1));
      else esc.push_bytes(text.substr(i, 1), static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1));
    }
    if (esc.s.empty()) return;
    std::vector<Symbol> sym;
    for (size_t i = 0; i < esc.s.size();) {
      const size_t n = std::min(utf8_len(static_cast<unsigned char>(esc.s[i])), esc.s.size() - i);
      sym.push_back({static_cast<int32_t>(sym.size()) - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(n)});
      if (sym.size() > 1) sym[sym.size() - 2].next = static_cast<int32_t>(sym.size() - 1);
      i += n;
    }
    merge_all(esc.s, sym);
    for (int32_t k = 0; k >= 0; k = sym[k].next) emit(esc, sym[k].start, sym[k].n, out);
  }

  // llama.cpp's SentencePiece path has no normalizer (spaces become U+2581 in encode).
  void normalize(std::string_view text, NormString& out) const override { out.assign_identity(text); }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= v_.size()) continue;
      const std::string& p = v_.pieces[id];
      if (v_.types[id] == TokenType::Byte && p.size() == 6) {
        s += static_cast<char>(std::stoi(p.substr(3, 2), nullptr, 16));
        continue;
      }
      for (size_t i = 0; i < p.size();) {
        if (p.compare(i, 3, kMetaspace) == 0) s += ' ', i += 3;
        else s += p[i++];
      }
    }
    return s;
  }

 private:
  struct Symbol {
    int32_t prev, next;
    uint32_t start, n;  // bytes of the escaped text; n == 0 once merged away
  };
  struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;
    bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
  };

  void try_add(const std::string& s, const std::vector<Symbol>& sym, int32_t l, int32_t r, std::priority_queue<Bigram>& q) const {
    if (l < 0 || r < 0) return;
    const uint32_t size = sym[l].n + sym[r].n;
    const int32_t id = v_.find_in_model(std::string_view(s).substr(sym[l].start, size));
    if (id < 0) return;
    q.push({v_.scores[id], l, r, size});
  }

  void merge_all(const std::string& s, std::vector<Symbol>& sym) const {
    std::priority_queue<Bigram> q;
    for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) try_add(s, sym, i - 1, i, q);
    while (!q.empty()) {
      const Bigram b = q.top();
      q.pop();
      Symbol& l = sym[b.left];
      Symbol& r = sym[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      try_add(s, sym, l.prev, b.left, q);
      try_add(s, sym, b.left, l.next, q);
    }
  }

  // A final symbol: its token, or its bytes as <0xNN> tokens when it is not in the vocabulary.
  // (Merged symbols are always tokens, so llama.cpp's re-segmentation reduces to this.)
  void emit(const NormString& esc, uint32_t start, uint32_t n, std::vector<TokenSpan>& out) const {
    const int32_t id = v_.find_in_model(std::string_view(esc.s).substr(start, n));
    if (id >= 0) {
      out.push_back({id, esc.src_begin[start], esc.src_end[start + n - 1]});
      return;
    }
    for (uint32_t k = start; k < start + n; ++k) {
      const int32_t b = byte_id_[static_cast<unsigned char>(esc.s[k])];
      out.push_back({b >= 0 ? b : v_.unk, esc.src_begin[k], esc.src_end[k]});
    }
  }

  const Vocab& v_;
  int32_t byte_id_[256];
};

}  // namespace

std::unique_ptr<Model> make_spm(const Vocab& v) { return std::make_unique<Spm>(v); }

}  // namespace embed::tok

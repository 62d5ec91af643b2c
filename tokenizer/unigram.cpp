// Unigram (tokenizer.ggml.model "t5": XLM-RoBERTa, multilingual-e5, bge-m3, T5) with HF's
// semantics: precompiled_charsmap normalization per grapheme, extra spaces collapsed, Metaspace
// (spaces -> U+2581, prefix, split before each U+2581), then Viterbi over the pieces' scores with
// an unknown node (min score - 10) where no one-character piece exists; adjacent unknowns fuse.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "tokenizer/charsmap.h"
#include "tokenizer/model.h"

namespace embed::tok {
namespace {

constexpr double kUnkPenalty = 10.0;

class Unigram final : public Model {
 public:
  explicit Unigram(const Vocab& v) : v_(v) {
    if (v_.scores.size() != v_.size()) fail(ErrorKind::Format, "Unigram vocabulary has no tokenizer.ggml.scores");
    if (v_.unk < 0) fail(ErrorKind::Format, "Unigram vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)");
    if (!v_.precompiled_charsmap.empty()) charsmap_ = Charsmap(v_.precompiled_charsmap);
    double min_score = std::numeric_limits<double>::max();
    for (size_t i = 0; i < v_.size(); ++i) {
      if (v_.added_flags[i] & kAddedOnly) continue;  // not in HF's Unigram model
      min_score = std::min(min_score, static_cast<double>(v_.scores[i]));
      max_piece_bytes_ = std::max(max_piece_bytes_, v_.pieces[i].size());
    }
    unk_score_ = min_score - kUnkPenalty;
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      const int32_t id = v_.find_in_model(buf);
      byte_id_[b] = (id >= 0 && v_.types[id] == TokenType::Byte) ? id : -1;
      byte_fallback_ = byte_fallback_ || byte_id_[b] >= 0;
    }
  }

  void encode(std::string_view text, bool, std::vector<TokenSpan>& out) const override {
    NormString norm;
    metaspace(text, norm);
    if (norm.s.empty()) return;
    // Metaspace split: a word starts at every U+2581 (merged with what follows).
    const std::string& s = norm.s;
    size_t start = 0;
    for (size_t i = kMetaspace.size(); i <= s.size(); ++i) {
      if (i == s.size() || s.compare(i, kMetaspace.size(), kMetaspace) == 0) {
        if (i > start) viterbi(norm, start, i, out);
        start = i;
        if (i < s.size()) i += kMetaspace.size() - 1;
      }
    }
  }

  // HF's Precompiled normalizer per grapheme, then runs of spaces collapsed (remove_extra_whitespaces).
  void normalize(std::string_view text, NormString& out) const override {
    NormString mapped;
    int32_t state = 0;
    char32_t prev = 0;
    size_t g = 0, i = 0;
    while (i <= text.size()) {
      char32_t cp = 0;
      size_t n = 0;
      if (i < text.size()) n = decode_utf8(text, i, cp);
      const bool boundary = i == text.size() || (i > 0 && grapheme_break(prev, cp, state));
      if (boundary && i > g) map_grapheme(text, g, i, mapped);
      if (boundary) g = i;
      if (i == text.size()) break;
      prev = cp;
      i += n;
    }
    const std::string& m = mapped.s;
    for (size_t k = 0; k < m.size(); ++k) {
      if (m[k] == ' ' && v_.remove_extra_whitespaces && k > 0 && m[k - 1] == ' ') continue;
      out.s.push_back(m[k]);
      out.src_begin.push_back(mapped.src_begin[k]);
      out.src_end.push_back(mapped.src_end[k]);
    }
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= v_.size()) continue;
      const std::string& p = v_.pieces[id];
      for (size_t i = 0; i < p.size();) {
        if (p.compare(i, 3, kMetaspace) == 0) s += ' ', i += 3;
        else s += p[i++];
      }
    }
    return s;
  }

 private:
  // The normalizer, then Metaspace: spaces -> U+2581 and the prefix (HF prepend_scheme "always").
  void metaspace(std::string_view text, NormString& out) const {
    NormString norm;
    normalize(text, norm);
    const std::string& m = norm.s;
    if (m.empty()) return;
    if (v_.add_space_prefix && m[0] != ' ') out.push_bytes(kMetaspace, norm.src_begin[0], norm.src_begin[0]);
    for (size_t k = 0; k < m.size(); ++k) {
      if (m[k] == ' ') {
        out.push_bytes(kMetaspace, norm.src_begin[k], norm.src_end[k]);
        continue;
      }
      out.s.push_back(m[k]);
      out.src_begin.push_back(norm.src_begin[k]);
      out.src_end.push_back(norm.src_end[k]);
    }
  }

  void map_grapheme(std::string_view text, size_t b, size_t e, NormString& out) const {
    const std::string_view g = text.substr(b, e - b);
    if (!charsmap_.empty() && g.size() < 6) {
      if (auto r = charsmap_.transform(g)) return out.push_bytes(*r, static_cast<uint32_t>(b), static_cast<uint32_t>(e));
    }
    for (size_t i = 0; i < g.size();) {
      const size_t n = utf8_len(static_cast<unsigned char>(g[i]));
      const std::string_view c = g.substr(i, n);
      const uint32_t cb = static_cast<uint32_t>(b + i), ce = static_cast<uint32_t>(b + i + n);
      auto r = charsmap_.empty() ? std::nullopt : charsmap_.transform(c);
      out.push_bytes(r ? *r : c, cb, ce);
      i += n;
    }
  }

  // Best segmentation of norm.s[b, e) (one Metaspace word); ties keep the earliest start.
  void viterbi(const NormString& norm, size_t b, size_t e, std::vector<TokenSpan>& out) const {
    const std::string_view w = std::string_view(norm.s).substr(b, e - b);
    const size_t n = w.size();
    thread_local std::vector<double> best;
    thread_local std::vector<int32_t> from, tok;
    best.assign(n + 1, -std::numeric_limits<double>::infinity());
    from.assign(n + 1, -1);
    tok.assign(n + 1, -1);
    best[0] = 0;
    auto relax = [&](size_t i, size_t j, double score, int32_t id) {
      if (score > best[j]) best[j] = score, from[j] = static_cast<int32_t>(i), tok[j] = id;
    };
    for (size_t i = 0; i < n;) {
      const size_t clen = std::min(utf8_len(static_cast<unsigned char>(w[i])), n - i);
      bool single = false;
      for (size_t j = i + clen; j - i <= max_piece_bytes_;) {
        const int32_t id = v_.find_in_model(w.substr(i, j - i));
        if (id >= 0) {
          single = single || j == i + clen;
          relax(i, j, best[i] + v_.scores[id], id);
        }
        if (j == n) break;
        j += std::min(utf8_len(static_cast<unsigned char>(w[j])), n - j);
      }
      if (!single) relax(i, i + clen, best[i] + unk_score_, v_.unk);
      i += clen;
    }
    thread_local std::vector<std::pair<size_t, size_t>> path;  // [begin, end) in w, in order
    path.clear();
    for (size_t j = n; j > 0; j = static_cast<size_t>(from[j])) path.emplace_back(static_cast<size_t>(from[j]), j);
    std::reverse(path.begin(), path.end());
    for (size_t k = 0; k < path.size(); ++k) {
      size_t pb = path[k].first, pe = path[k].second;
      int32_t id = tok[pe];
      if (id == v_.unk) {  // fuse adjacent unknowns; HF then looks the fused text up again
        while (k + 1 < path.size() && tok[path[k + 1].second] == v_.unk) pe = path[++k].second;
        id = v_.find_in_model(w.substr(pb, pe - pb));
        if (id < 0) id = v_.unk;
      }
      const uint32_t sb = norm.src_begin[b + pb], se = norm.src_end[b + pe - 1];
      if (id == v_.unk && byte_fallback_ && emit_bytes(w.substr(pb, pe - pb), sb, se, out)) continue;
      out.push_back({id, sb, se});
    }
  }

  bool emit_bytes(std::string_view s, uint32_t sb, uint32_t se, std::vector<TokenSpan>& out) const {
    for (unsigned char c : s)
      if (byte_id_[c] < 0) return false;
    for (unsigned char c : s) out.push_back({byte_id_[c], sb, se});
    return true;
  }

  const Vocab& v_;
  Charsmap charsmap_;
  double unk_score_ = 0;
  size_t max_piece_bytes_ = 0;
  int32_t byte_id_[256];
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Model> make_unigram(const Vocab& v) { return std::make_unique<Unigram>(v); }

}  // namespace embed::tok

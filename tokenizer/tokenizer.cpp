// Tokenizer: what every algorithm shares. Invalid UTF-8 repair, special-token extraction, the
// family's single and pair layouts (BOS/CLS/EOS/SEP, type ids), the doubled-BOS and pooling-EOS
// rules, truncation and debug decoding. The algorithms themselves live in the Model classes.
#include "tokenizer/tokenizer.h"

#include "base/error.h"
#include "tokenizer/model.h"
#include "tokenizer/special.h"
#include "tokenizer/vocab.h"

namespace embed::tok {
namespace {

constexpr int64_t kPoolingLast = 3;  // llama.cpp LLAMA_POOLING_TYPE_LAST

Kind kind_of(const std::string& model) {
  if (model == "bert") return Kind::WordPiece;
  if (model == "gpt2") return Kind::Bpe;
  if (model == "llama") return Kind::SentencePiece;
  return Kind::Unigram;  // Vocab::from_gguf has rejected everything but "t5" already
}

void push(Encoding& e, int32_t id, uint32_t b, uint32_t en, bool special, int8_t seq, int32_t type) {
  e.ids.push_back(id);
  e.type_ids.push_back(type);
  e.begin.push_back(b);
  e.end.push_back(en);
  e.special.push_back(special ? 1 : 0);
  e.sequence.push_back(seq);
}

void append(Encoding& dst, const Encoding& src, int32_t type) {
  for (size_t i = 0; i < src.size(); ++i) push(dst, src.ids[i], src.begin[i], src.end[i], src.special[i], src.sequence[i], type);
  dst.warnings.insert(dst.warnings.end(), src.warnings.begin(), src.warnings.end());
}

void add_token(Encoding& e, int32_t id, int32_t type) {
  if (id >= 0) push(e, id, 0, 0, true, -1, type);
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::WordPiece: return "WordPiece";
    case Kind::Bpe: return "BPE";
    case Kind::SentencePiece: return "SentencePiece";
    case Kind::Unigram: return "Unigram";
  }
  return "?";
}

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->vocab_ = std::make_unique<Vocab>(Vocab::from_gguf(f));
  const Vocab& v = *t->vocab_;
  t->kind_ = kind_of(v.model);
  if (t->kind_ == Kind::Bpe && v.pre.empty())
    t->vocab_->warnings.push_back("tokenizer.ggml.pre is missing: using llama.cpp's \"default\" pre-tokenizer, which "
                                  "may not match the model's own (re-convert the model to record it)");
  switch (t->kind_) {
    case Kind::WordPiece: t->model_ = make_wordpiece(v); break;
    case Kind::Bpe: t->model_ = make_bpe(v); break;
    case Kind::SentencePiece: t->model_ = make_spm(v); break;
    case Kind::Unigram: t->model_ = make_unigram(v); break;
  }
  t->build_added_matchers();
  // Last-token pooling (Qwen3-Embedding) reads the hidden state at an appended <|endoftext|>.
  if (v.pooling_type == kPoolingLast && (t->kind_ == Kind::Bpe || t->kind_ == Kind::SentencePiece)) {
    const int32_t eot = v.find("<|endoftext|>");
    t->pooling_eos_ = eot >= 0 ? eot : v.eos;
    t->append_pooling_eos_ = t->pooling_eos_ >= 0 && !(v.add_eos && v.eos == t->pooling_eos_);
  }
  return t;
}

// The added tokens in the order HF extracts them: those matched in the raw text, then, in the text
// between them, those marked `normalized` in the normalizer's output (patterns normalized too).
void Tokenizer::build_added_matchers() {
  const Vocab& v = *vocab_;
  raw_added_ = std::make_unique<AddedTokenMatcher>();
  normalized_added_ = std::make_unique<AddedTokenMatcher>();
  for (size_t i = 0; i < v.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (!v.is_added(id)) continue;
    uint8_t flags = v.added_flags[i];
    std::string text = v.pieces[i];
    if (!v.has_added_flags) {
      // llama.cpp's converter gives WordPiece user-defined tokens the word-start U+2581 of its
      // vocabulary convention; the text they match has none.
      if (kind_ == Kind::WordPiece && v.types[i] == TokenType::UserDefined && text.rfind(kMetaspace, 0) == 0)
        text.erase(0, kMetaspace.size());
      // XLM-R's tokenizer.json marks <mask> lstrip; files without attributes get it by rule, as
      // llama.cpp does by model name.
      if (kind_ == Kind::Unigram && id == v.mask) flags |= kLstrip;
    }
    const bool special = v.types[i] != TokenType::UserDefined;
    if (flags & kNormalized) {
      NormString n;
      model_->normalize(text, n);
      normalized_added_->add(std::move(n.s), id, flags, special);
    } else {
      raw_added_->add(std::move(text), id, flags, special);
    }
  }
  raw_added_->finish();
  normalized_added_->finish();
}

// Content tokens of one text: added tokens split out (special ones unless the rule reads them as
// text), every other run through the model.
void Tokenizer::encode_content(std::string_view text, const SpecialRule& rule, int8_t seq, Encoding& e) const {
  std::string repaired;
  std::vector<uint32_t> src;
  const bool fixed = sanitize_utf8(text, repaired, src);
  if (fixed) {
    e.warnings.push_back("input is not valid UTF-8: each invalid byte was replaced by U+FFFD");
    text = repaired;
  }
  // A special token is text under split_special, or, for a filled template, where it overlaps
  // the caller's ranges (input bytes; src maps repaired bytes back to them).
  const AddedTokenMatcher::SpecialAsText as_text = [&](size_t b, size_t en) {
    if (!rule.only_in) return true;
    const size_t ib = fixed ? src[b] : b, ie = fixed ? src[en - 1] + 1 : en;
    for (const TextRange& r : *rule.only_in)
      if (ib < r.end && r.begin < ie) return true;
    return false;
  };
  const AddedTokenMatcher::SpecialAsText* rule_fn = rule.split ? &as_text : nullptr;
  const size_t first = e.size();
  std::vector<AddedTokenMatcher::Piece> pieces;
  raw_added_->split(text, rule_fn, pieces);
  bool at_start = true;
  for (const auto& p : pieces) {
    if (p.id >= 0) {
      push_added(p.id, p.begin, p.end, seq, e);
      at_start = true;
    } else {
      encode_between(text, p.begin, p.end, rule_fn, seq, at_start, e);
    }
  }
  if (fixed)
    for (size_t i = first; i < e.size(); ++i) {
      e.begin[i] = src[e.begin[i]];
      e.end[i] = e.end[i] == 0 ? 0 : src[e.end[i] - 1] + 1;
    }
}

// Text between raw-matched added tokens: `normalized` added tokens are found in the normalizer's
// output and mapped back to source bytes; the rest goes to the model, which normalizes it itself.
void Tokenizer::encode_between(std::string_view text, size_t begin, size_t end, const std::function<bool(size_t, size_t)>* as_text,
                               int8_t seq, bool& at_start, Encoding& e) const {
  if (normalized_added_->empty()) return encode_plain(text, begin, end, seq, at_start, e);
  NormString n;
  model_->normalize(text.substr(begin, end - begin), n);
  const AddedTokenMatcher::SpecialAsText in_source = [&](size_t nb, size_t ne) {
    return (*as_text)(begin + n.src_begin[nb], begin + n.src_end[ne - 1]);
  };
  std::vector<AddedTokenMatcher::Piece> pieces;
  normalized_added_->split(n.s, as_text ? &in_source : nullptr, pieces);
  size_t done = begin;
  for (const auto& p : pieces) {
    if (p.id < 0) continue;
    const size_t tb = std::max(done, begin + n.src_begin[p.begin]);
    const size_t te = std::max(tb, begin + static_cast<size_t>(n.src_end[p.end - 1]));
    encode_plain(text, done, tb, seq, at_start, e);
    push_added(p.id, tb, te, seq, e);
    at_start = true;
    done = te;
  }
  encode_plain(text, done, end, seq, at_start, e);
}

void Tokenizer::encode_plain(std::string_view text, size_t begin, size_t end, int8_t seq, bool& at_start, Encoding& e) const {
  if (end <= begin) return;
  std::vector<TokenSpan> spans;
  model_->encode(text.substr(begin, end - begin), at_start, spans);
  for (const auto& s : spans) push(e, s.id, static_cast<uint32_t>(begin + s.begin), static_cast<uint32_t>(begin + s.end), false, seq, 0);
  at_start = false;
}

// Special tokens found in the text count as special (pooling can leave them out); user-defined
// ones are content, as in HF's attention mask and sentence-transformers' pooling.
void Tokenizer::push_added(int32_t id, size_t begin, size_t end, int8_t seq, Encoding& e) const {
  const bool special = vocab_->types[static_cast<size_t>(id)] != TokenType::UserDefined;
  push(e, id, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), special, seq, 0);
}

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& o) const {
  return encode_single(text, SpecialRule{o.split_special, nullptr}, o);
}

Encoding Tokenizer::encode_template(std::string_view text, const std::vector<TextRange>& user, const EncodeOptions& o) const {
  return encode_single(text, SpecialRule{o.split_special, &user}, o);
}

Encoding Tokenizer::encode_single(std::string_view text, const SpecialRule& rule, const EncodeOptions& o) const {
  Encoding content;
  encode_content(text, rule, 0, content);
  if (!o.add_special) {
    apply_limit(content, o);
    return content;
  }
  Encoding out;
  add_single_specials(content, out);
  apply_limit(out, o);
  return out;
}

// The layout HF's post-processor (and llama.cpp) gives a single text. A text that starts with the
// BOS / [CLS] token gets a second one, as both do; a warning says so.
void Tokenizer::add_single_specials(Encoding& content, Encoding& out) const {
  const Vocab& v = *vocab_;
  const int32_t first = kind_ == Kind::WordPiece ? cls() : v.bos;
  if (v.add_bos && first >= 0 && !content.ids.empty() && content.ids[0] == first && content.special[0])
    out.warnings.push_back("text starts with \"" + v.pieces[first] + "\", which is added anyway: the model sees it twice, as "
                           "with HF tokenizers (split_special reads such text as plain text)");
  if (v.add_bos) add_token(out, first, 0);
  append(out, content, 0);
  if (kind_ == Kind::WordPiece) {
    if (v.add_sep) add_token(out, v.sep, 0);
    return;
  }
  if (append_pooling_eos_) {
    if (out.ids.empty() || out.ids.back() != pooling_eos_) {
      add_token(out, pooling_eos_, 0);
      out.warnings.push_back("appended \"" + v.pieces[pooling_eos_] +
                             "\": the model pools at the last token and its metadata does not add it");
    }
  } else if (v.add_eos) {
    add_token(out, v.eos, 0);
  }
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& o) const {
  Encoding ca, cb;
  encode_content(a, SpecialRule{o.split_special, nullptr}, 0, ca);
  encode_content(b, SpecialRule{o.split_special, nullptr}, 1, cb);
  Encoding out;
  if (!o.add_special) {
    append(out, ca, 0);
    append(out, cb, 1);
    apply_limit(out, o);
    return out;
  }
  const Vocab& v = *vocab_;
  if (kind_ == Kind::WordPiece) {  // [CLS] a [SEP] b [SEP], type ids 0 then 1 (HF BertProcessing)
    add_token(out, cls(), 0);
    append(out, ca, 0);
    add_token(out, v.sep, 0);
    append(out, cb, 1);
    add_token(out, v.sep, 1);
  } else if (kind_ == Kind::Unigram) {  // XLM-R (RobertaProcessing): <s> a </s> </s> b </s>, all type 0
    if (v.add_bos) add_token(out, v.bos, 0);
    append(out, ca, 0);
    add_token(out, v.eos, 0);
    if (v.add_bos) add_token(out, v.eos, 0);
    append(out, cb, 0);
    add_token(out, v.eos, 0);
  } else {  // decoders: [BOS] a [EOS] [SEP] b [EOS] as the flags say (Qwen3-Embedding: a <eot> b <eot>)
    const bool eos = v.add_eos || append_pooling_eos_;
    const int32_t eos_id = append_pooling_eos_ ? pooling_eos_ : v.eos;
    if (v.add_bos) add_token(out, v.bos, 0);
    append(out, ca, 0);
    if (eos) add_token(out, eos_id, 0);
    if (v.add_sep) add_token(out, v.sep, 1);
    append(out, cb, 1);
    if (eos) add_token(out, eos_id, 1);
    if (append_pooling_eos_) out.warnings.push_back("appended \"" + v.pieces[pooling_eos_] + "\" for last-token pooling");
  }
  apply_limit(out, o);
  return out;
}

void Tokenizer::apply_limit(Encoding& e, const EncodeOptions& o) const {
  if (o.max_tokens == 0 || e.size() <= o.max_tokens) return;
  if (o.overflow == Overflow::Error)
    fail(ErrorKind::InvalidArgument, "input is " + std::to_string(e.size()) + " tokens long, the limit is " +
                                         std::to_string(o.max_tokens));
  truncate(e, o.max_tokens, o.direction);
}

void Tokenizer::truncate(Encoding& e, size_t max_tokens, TruncationDirection direction) const {
  if (e.size() <= max_tokens) return;
  size_t n_added = 0, len[2] = {0, 0};
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.sequence[i] < 0) ++n_added;
    else ++len[e.sequence[i] == 0 ? 0 : 1];
  }
  if (n_added > max_tokens)
    fail(ErrorKind::InvalidArgument, "cannot truncate to " + std::to_string(max_tokens) + " tokens: the " +
                                         std::to_string(n_added) + " added special tokens alone exceed it");
  // Longest first: drop from the longer text until the rest fits.
  size_t keep[2] = {len[0], len[1]};
  for (size_t excess = e.size() - max_tokens; excess > 0; --excess) {
    if (keep[0] > keep[1]) --keep[0];
    else --keep[1];
  }
  // Content token k of text s (0-based) stays when it is among the first keep[s] (Right) or the
  // last keep[s] (Left); added specials always stay where they are.
  const size_t first_kept[2] = {direction == TruncationDirection::Left ? len[0] - keep[0] : 0,
                                direction == TruncationDirection::Left ? len[1] - keep[1] : 0};
  Encoding out;
  size_t seen[2] = {0, 0};
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.sequence[i] >= 0) {
      const int s = e.sequence[i] ? 1 : 0;
      const size_t k = seen[s]++;
      if (k < first_kept[s] || k >= first_kept[s] + keep[s]) continue;
    }
    push(out, e.ids[i], e.begin[i], e.end[i], e.special[i], e.sequence[i], e.type_ids[i]);
  }
  out.warnings = std::move(e.warnings);
  out.warnings.push_back("truncated from " + std::to_string(e.size()) + " to " + std::to_string(out.size()) + " tokens");
  e = std::move(out);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const { return model_->decode(ids); }

std::string_view Tokenizer::piece(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) return {};
  return vocab_->pieces[id];
}

size_t Tokenizer::vocab_size() const { return vocab_->size(); }
const std::vector<std::string>& Tokenizer::load_warnings() const { return vocab_->warnings; }
bool Tokenizer::adds_bos() const { return vocab_->add_bos; }
int32_t Tokenizer::bos() const { return vocab_->bos; }
int32_t Tokenizer::eos() const { return vocab_->eos; }
int32_t Tokenizer::sep() const { return vocab_->sep; }
int32_t Tokenizer::cls() const { return vocab_->cls >= 0 ? vocab_->cls : vocab_->bos; }
int32_t Tokenizer::pad() const { return vocab_->pad; }
int32_t Tokenizer::unk() const { return vocab_->unk; }
int32_t Tokenizer::mask() const { return vocab_->mask; }

}  // namespace embed::tok

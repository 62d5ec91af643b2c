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

// Start of the whitespace run that ends at `stop` (not before `from`): what an lstrip token absorbs.
size_t strip_left(std::string_view text, size_t from, size_t stop) {
  while (stop > from) {
    size_t b = stop - 1;
    while (b > from && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
    char32_t cp;
    if (decode_utf8(text, b, cp) == 0 || !is_space(cp)) break;
    stop = b;
  }
  return stop;
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
  t->always_ = std::make_unique<SpecialMatcher>();
  t->parsed_ = std::make_unique<SpecialMatcher>();
  for (size_t i = 0; i < v.size(); ++i) {
    const TokenType ty = v.types[i];
    if (ty == TokenType::UserDefined) t->always_->add(v.pieces[i], static_cast<int32_t>(i));
    if (ty == TokenType::UserDefined || ty == TokenType::Control || ty == TokenType::Unknown)
      t->parsed_->add(v.pieces[i], static_cast<int32_t>(i));
  }
  // XLM-R's tokenizer.json marks <mask> lstrip (it absorbs the spaces before it); GGUF has no
  // attribute for it, so the Unigram family gets it by rule, as llama.cpp does by model name.
  if (t->kind_ == Kind::Unigram) t->lstrip_id_ = v.mask;
  t->always_->finish();
  t->parsed_->finish();
  // Last-token pooling (Qwen3-Embedding) reads the hidden state at an appended <|endoftext|>.
  if (v.pooling_type == kPoolingLast && (t->kind_ == Kind::Bpe || t->kind_ == Kind::SentencePiece)) {
    const int32_t eot = v.find("<|endoftext|>");
    t->pooling_eos_ = eot >= 0 ? eot : v.eos;
    t->append_pooling_eos_ = t->pooling_eos_ >= 0 && !(v.add_eos && v.eos == t->pooling_eos_);
  }
  return t;
}

// Content tokens of one text: special-token text split out (user-defined always, control tokens
// only with parse_special), every other run through the model.
void Tokenizer::encode_content(std::string_view text, bool parse_special, int8_t seq, Encoding& e) const {
  std::string repaired;
  std::vector<uint32_t> src;
  const bool fixed = sanitize_utf8(text, repaired, src);
  if (fixed) {
    e.warnings.push_back("input is not valid UTF-8: each invalid byte was replaced by U+FFFD");
    text = repaired;
  }
  const SpecialMatcher& m = parse_special ? *parsed_ : *always_;
  std::vector<TokenSpan> spans;
  size_t pos = 0;
  bool at_start = true;
  const size_t first = e.size();
  while (true) {
    const auto hit = m.find(text, pos);
    size_t stop = hit.pos == std::string_view::npos ? text.size() : hit.pos;
    if (hit.pos != std::string_view::npos && hit.id == lstrip_id_) stop = strip_left(text, pos, stop);
    if (stop > pos) {
      spans.clear();
      model_->encode(text.substr(pos, stop - pos), at_start, spans);
      for (const auto& s : spans)
        push(e, s.id, static_cast<uint32_t>(pos + s.begin), static_cast<uint32_t>(pos + s.end), false, seq, 0);
      at_start = false;
    }
    if (hit.pos == std::string_view::npos) break;
    // Parsed control tokens count as special (pooling masks them); user-defined ones are text.
    const bool control = vocab_->types[hit.id] != TokenType::UserDefined;
    push(e, hit.id, static_cast<uint32_t>(hit.pos), static_cast<uint32_t>(hit.pos + hit.len), control, seq, 0);
    pos = hit.pos + hit.len;
    at_start = true;
  }
  if (fixed)
    for (size_t i = first; i < e.size(); ++i) {
      e.begin[i] = src[e.begin[i]];
      e.end[i] = e.end[i] == 0 ? 0 : src[e.end[i] - 1] + 1;
    }
}

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& o) const {
  Encoding content;
  encode_content(text, o.parse_special, 0, content);
  if (!o.add_special) {
    apply_limit(content, o);
    return content;
  }
  const Vocab& v = *vocab_;
  if (v.bos >= 0 && !v.pieces[v.bos].empty() && text.substr(0, v.pieces[v.bos].size()) == v.pieces[v.bos] &&
      (kind_ == Kind::Bpe || kind_ == Kind::SentencePiece) && v.add_bos && !o.parse_special)
    content.warnings.push_back("text starts with the BOS text \"" + v.pieces[v.bos] +
                               "\"; it is tokenized as plain text (parse_special is off) and BOS is added");
  Encoding out;
  add_single_specials(content, out);
  apply_limit(out, o);
  return out;
}

void Tokenizer::add_single_specials(Encoding& content, Encoding& out) const {
  const Vocab& v = *vocab_;
  if (kind_ == Kind::WordPiece) {
    const bool starts_with_cls = !content.ids.empty() && content.ids[0] == cls() && content.special[0];
    if (v.add_bos && starts_with_cls)
      out.warnings.push_back("text already starts with \"" + v.pieces[cls()] + "\"; not adding a second one");
    else if (v.add_bos)
      add_token(out, cls(), 0);
    append(out, content, 0);
    if (v.add_sep) add_token(out, v.sep, 0);
    return;
  }
  const bool starts_with_bos = !content.ids.empty() && content.ids[0] == v.bos && content.special[0];
  if (v.add_bos && starts_with_bos)
    out.warnings.push_back("text already starts with the BOS token \"" + v.pieces[v.bos] + "\"; not adding a second one");
  else if (v.add_bos)
    add_token(out, v.bos, 0);
  append(out, content, 0);
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
  encode_content(a, o.parse_special, 0, ca);
  encode_content(b, o.parse_special, 1, cb);
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

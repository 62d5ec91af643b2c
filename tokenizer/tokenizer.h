// Public interface of the tokenizers: text -> token ids (with offsets, special-token mask, type
// ids), pairs for cross-encoders, truncation and debug decoding, built from a GGUF's
// tokenizer.ggml.* metadata. Depends on gguf/ only, never on engine tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/hf_import.h"

namespace embed::tok {

enum class Kind { WordPiece, Bpe, SentencePiece, Unigram };
const char* kind_name(Kind k);

// What to do with an input longer than EncodeOptions::max_tokens.
enum class Overflow {
  Truncate,  // drop content tokens (the longer text first for pairs) at `direction`; keep specials
  Error,     // throw embed::Error(InvalidArgument) naming both lengths
};

// Which end of the content truncation keeps (HF tokenizers' / TEI's truncation_direction).
enum class TruncationDirection {
  Right,  // drop tokens from the end: keep the start (the default)
  Left,   // drop tokens from the start: keep the end
};

struct EncodeOptions {
  bool add_special = true;     // BOS/CLS/EOS/SEP as the model's metadata says
  bool parse_special = false;  // recognise special-token text inside the input (templates only)
  size_t max_tokens = 0;       // 0: no limit
  Overflow overflow = Overflow::Truncate;
  TruncationDirection direction = TruncationDirection::Right;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;      // token type (segment) ids, 0 for single texts
  std::vector<uint32_t> begin, end;   // byte offsets of each token into the input (specials: empty range)
  std::vector<uint8_t> special;       // 1 for tokens added by add_special (or parsed specials)
  std::vector<int8_t> sequence;       // 0 or 1: which input text the token came from; -1 for added specials
  std::vector<std::string> warnings;  // e.g. doubled BOS, appended missing EOS

  size_t size() const { return ids.size(); }
};

class Model;  // one tokenization algorithm (internal)
struct Vocab;
class SpecialMatcher;

// Immutable after from_gguf: encode/encode_pair/decode are const and safe to call from many threads.
class Tokenizer {
 public:
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);  // throws embed::Error with a clear message

  Encoding encode(std::string_view text, const EncodeOptions& o = {}) const;
  Encoding encode_pair(std::string_view a, std::string_view b, const EncodeOptions& o = {}) const;  // cross-encoders
  // Truncate to max_tokens keeping the required special tokens (e.g. [CLS] and the final
  // [SEP]/EOS) on both sides; content tokens go from the end (Right) or the start (Left).
  void truncate(Encoding& e, size_t max_tokens, TruncationDirection direction = TruncationDirection::Right) const;
  std::string decode(const std::vector<int32_t>& ids) const;  // debugging
  std::string_view piece(int32_t id) const;
  size_t vocab_size() const;
  Kind kind() const { return kind_; }
  const std::vector<std::string>& load_warnings() const;

  int32_t bos() const; int32_t eos() const; int32_t sep() const; int32_t cls() const;
  int32_t pad() const; int32_t unk() const; int32_t mask() const;  // -1 when absent
  bool adds_bos() const;  // add_special puts BOS (CLS for WordPiece) first
  // The token the model's pooling must see last (Qwen3-Embedding's <|endoftext|>), or -1.
  int32_t pooling_eos() const { return pooling_eos_; }

 private:
  Tokenizer();
  void encode_content(std::string_view text, bool parse_special, int8_t seq, Encoding& e) const;
  void add_single_specials(Encoding& content, Encoding& out) const;
  void apply_limit(Encoding& e, const EncodeOptions& o) const;

  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<SpecialMatcher> always_;   // user-defined tokens: split out of any text
  std::unique_ptr<SpecialMatcher> parsed_;   // plus control tokens: only with parse_special
  Kind kind_ = Kind::Bpe;
  int32_t pooling_eos_ = -1;
  int32_t lstrip_id_ = -1;  // a token that absorbs the whitespace before it (XLM-R <mask>)
  bool append_pooling_eos_ = false;  // metadata does not add the EOS the pooling needs
};

}  // namespace embed::tok

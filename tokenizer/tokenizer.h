// Public interface of the tokenizers: text -> token ids (with offsets, special-token mask, type
// ids), pairs for cross-encoders, truncation and debug decoding, built from a GGUF's
// tokenizer.ggml.* metadata. Depends on gguf/ only, never on engine tensors.
#pragma once

#include <cstdint>
#include <functional>
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
  bool add_special = true;  // BOS/CLS/EOS/SEP as the model's metadata says
  // Special-token text in the input ("[SEP]", "<|endoftext|>") is read as plain text (HF's
  // split_special_tokens), for untrusted text. Default: split out as the special token, as HF and
  // llama.cpp do. User-defined added tokens are split out either way.
  bool split_special = false;
  size_t max_tokens = 0;  // 0: no limit
  Overflow overflow = Overflow::Truncate;
  TruncationDirection direction = TruncationDirection::Right;
};

// Bytes [begin, end) of an input.
struct TextRange {
  size_t begin = 0, end = 0;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;      // token type (segment) ids, 0 for single texts
  std::vector<uint32_t> begin, end;   // byte offsets of each token into the input (specials: empty range)
  std::vector<uint8_t> special;       // 1 for tokens added by add_special and special tokens found in the text
  std::vector<int8_t> sequence;       // 0 or 1: which input text the token came from; -1 for added specials
  std::vector<std::string> warnings;  // e.g. doubled BOS, appended missing EOS

  size_t size() const { return ids.size(); }
};

class Model;  // one tokenization algorithm (internal)
struct Vocab;
class AddedTokenMatcher;

// Immutable after from_gguf: encode/encode_pair/decode are const and safe to call from many threads.
class Tokenizer {
 public:
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);  // throws embed::Error with a clear message

  Encoding encode(std::string_view text, const EncodeOptions& o = {}) const;
  Encoding encode_pair(std::string_view a, std::string_view b, const EncodeOptions& o = {}) const;  // cross-encoders
  // A prompt template filled with the caller's texts, which occupy the byte ranges `user` of
  // `text` (the Qwen3-Reranker prompt): the template's own special-token text is always the
  // special token; inside `user` it follows o.split_special. Equals encode(text, o) without it.
  Encoding encode_template(std::string_view text, const std::vector<TextRange>& user, const EncodeOptions& o) const;
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
  void build_added_matchers();
  // Which special-token text is read as text: none, all (split_special), or that inside `only_in`.
  struct SpecialRule {
    bool split = false;
    const std::vector<TextRange>* only_in = nullptr;
  };
  Encoding encode_single(std::string_view text, const SpecialRule& rule, const EncodeOptions& o) const;
  void encode_content(std::string_view text, const SpecialRule& rule, int8_t seq, Encoding& e) const;
  void encode_between(std::string_view text, size_t begin, size_t end, const std::function<bool(size_t, size_t)>* as_text,
                      int8_t seq, bool& at_start, Encoding& e) const;
  void encode_plain(std::string_view text, size_t begin, size_t end, int8_t seq, bool& at_start, Encoding& e) const;
  void push_added(int32_t id, size_t begin, size_t end, int8_t seq, Encoding& e) const;
  void add_single_specials(Encoding& content, Encoding& out) const;
  void apply_limit(Encoding& e, const EncodeOptions& o) const;

  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<AddedTokenMatcher> raw_added_;         // added tokens matched in the input as given
  std::unique_ptr<AddedTokenMatcher> normalized_added_;  // those marked `normalized`: in the normalizer's output
  Kind kind_ = Kind::Bpe;
  int32_t pooling_eos_ = -1;
  bool append_pooling_eos_ = false;  // metadata does not add the EOS the pooling needs
};

}  // namespace embed::tok

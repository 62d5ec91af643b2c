// What to compute for a set of inputs: the one description that every front end (the CLI, the
// C++ API, the server, bindings) fills in and the engine passes down unchanged, its validation
// against a model (one set of messages), and the execution settings kept apart from it.
// Add a field here, resolve and check it in resolve_request(), and every front end gets it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/model.h"
#include "engine/quantize.h"
#include "tokenizer/tokenizer.h"

namespace embed {

struct ModelDescription;
using TruncationDirection = tok::TruncationDirection;

// "right" / "left", any case (TEI spells them "Right" / "Left"); false for anything else.
bool parse_truncation_direction(const std::string& s, TruncationDirection* out);

// Embedding texts and token ids, or scoring (query, document) pairs with a rank head.
enum class Task { Embed, Rerank };

// What happens to a text longer than max_tokens (Task::Embed).
enum class LongInputs {
  Refuse,  // an error, unless truncate cuts it
  Chunk,   // windows of max_tokens tokens sharing long_overlap tokens, each pooled; the input's row
           // is their mean weighted by each window's text tokens (docs/long-inputs.md)
};
// "error" / "chunk"; false for anything else.
bool parse_long_inputs(const std::string& s, LongInputs* out);

// Where late chunking cuts a text when the caller gives no spans.
enum class ChunkRule {
  Tokens,     // every chunk_tokens tokens
  Sentences,  // after . ! ? (and their CJK forms) followed by a space or the end, and at line breaks
  Separator,  // at each occurrence of chunk_separator, which is removed (with a newline on each side)
};
// "tokens" / "sentences" / "separator"; false for anything else.
bool parse_chunk_rule(const std::string& s, ChunkRule* out);

// A character span [begin, end) of an input text, in Unicode code points (Python's str indices).
struct CharSpan {
  int64_t begin = 0, end = 0;
  bool operator==(const CharSpan& o) const { return begin == o.begin && end == o.end; }
};

// Which read-outs a request takes from its one forward pass per batch: the pooled row and, where
// the model has the heads, BGE-M3's sparse weights and ColBERT vectors (engine/readout.h).
struct Outputs {
  bool dense = true;     // the pooled vector (the model's pooling; BGE-M3: CLS), finished as the Request says
  bool sparse = false;   // token ids with weights (a sparse head: BGE-M3)
  bool colbert = false;  // one normalized vector per token after CLS (a ColBERT head: BGE-M3)
};

struct Request {
  // Per forward pass (sequences batched together share these).
  std::optional<Pooling> pooling;  // default: the model's for Embed, Rank for Rerank
  bool exclude_special = false;    // mean pooling leaves out special tokens ([CLS], [SEP], BOS, ...)
  bool hidden_states = false;      // Context::run: also keep every token's final hidden state
  Outputs outputs;                 // Embed: the read-outs (default: the pooled row only)
  // Per output row (may differ between requests in one forward pass).
  std::optional<int> normalize;    // -1 none, 0 max-abs int16 range, 1 L1, 2 L2, > 2 p-norm;
                                   // default 2, none for rank pooling
  std::optional<int> dimensions;   // Matryoshka: the first `dimensions` values (1..width), then normalize; none = all
  // Output precision of pooled rows (Embed only), applied last (engine/quantize.h): int8 / uint8
  // need calibration ranges of the output width (embed calibrate); rows then come as
  // Embeddings::codes instead of floats.
  Precision precision = Precision::Float32;
  std::shared_ptr<const QuantizationRanges> ranges;
  // Tokenization and length.
  int64_t max_tokens = 0;          // per input (per query+document); 0 = the model's context length
  bool truncate = false;           // false: an input longer than max_tokens is an error
  TruncationDirection truncation_direction = TruncationDirection::Right;  // Right keeps the start
  LongInputs long_inputs = LongInputs::Refuse;
  int64_t long_overlap = -1;       // tokens two consecutive windows share (-1: max_tokens / 4)
  // Special-token text in the inputs ("[SEP]", "<|endoftext|>") is plain text (HF's
  // split_special_tokens), for text the caller does not control. Default (false): it is the
  // special token, as HF tokenizers, sentence-transformers, TEI and llama.cpp read it. The
  // model's own prompts and templates keep their special tokens either way.
  bool split_special = false;
  // Prompt, prepended to every text (Embed only): explicit text (even "") > prompt_name (the
  // model's prompts, then the presets of engine/prompts.h) > the model's default prompt > none.
  std::optional<std::string> prompt;
  std::string prompt_name;
  // Late chunking (Embed, texts): each text is encoded whole (past max_tokens: in windows as for
  // LongInputs::Chunk, each chunk pooled from the window where it has the most context) and gives
  // one row per chunk, the mean of its tokens' final hidden states (then the model's projections
  // and the row finish). Chunks: the character spans given with a text, else chunk_rule.
  bool late_chunking = false;
  ChunkRule chunk_rule = ChunkRule::Tokens;
  int64_t chunk_tokens = 256;
  std::string chunk_separator = "<<<CHUNK>>>";
  // Prompt template instead of a prompt (Embed only): the text goes where "{text}" stands (exactly
  // once), e.g. PromptEOL's 'This sentence: "{text}" means in one word: "'. Any pooling.
  std::optional<std::string> prompt_template;
  // KV-Embedding (arXiv 2601.01046; decoders only, Embed only): at layers kv_layers (first, last;
  // default: the band stored in the model by `embed kv-layers -o`, else the middle third of the
  // layers) each sequence's last key and value become a prefix
  // position with logit bias kv_bias (default 1.0). Pooling: hybrid by default; mean, last too.
  bool kv_embedding = false;
  std::optional<std::pair<int, int>> kv_layers;
  std::optional<float> kv_bias;
};

// How pooled rows are finished (Matryoshka truncation, then normalization, then quantization).
struct RowFinish {
  int normalize = 2;
  int dims = 0;  // 0 = the full width
  Precision precision = Precision::Float32;
  std::shared_ptr<const QuantizationRanges> ranges{};  // int8 / uint8
};

// A Request checked against a model, with every default filled in.
struct ResolvedRequest {
  Task task = Task::Embed;
  Pooling pooling = Pooling::Mean;
  bool exclude_special = false;
  bool hidden_states = false;
  Outputs outputs;
  RowFinish finish;
  int64_t max_tokens = 0;  // > 0
  bool truncate = false;
  TruncationDirection truncation_direction = TruncationDirection::Right;
  LongInputs long_inputs = LongInputs::Refuse;
  int64_t long_overlap = 0;  // resolved: 0 <= overlap < max_tokens
  bool split_special = false;
  std::string prompt;      // resolved text before the input ("" = none)
  std::string prompt_suffix;  // after the input (the rest of a prompt template)
  bool late_chunking = false;
  ChunkRule chunk_rule = ChunkRule::Tokens;
  int64_t chunk_tokens = 256;
  std::string chunk_separator;
  bool causal = false;     // the model's attention (late chunking's choice of window)
  KvRouting kv;            // off unless kv_embedding
};

// How a front end spells Request's fields (the command's flags, a route's JSON keys), so that
// resolve_request's messages name what the caller wrote: "--template must contain {text}", not the
// field behind it. A field that is not listed keeps its Request name.
struct FieldNames {
  std::vector<std::pair<std::string, std::string>> spelled;  // Request field -> the caller's name
  std::string operator()(const std::string& field) const;
};

// The validation of every front end. Throws embed::Error(InvalidArgument) whose message starts
// with the field at fault as `names` spells it ("dimensions 1000 is outside 1..384 for this model").
ResolvedRequest resolve_request(const ModelDescription& model, const Request& r, Task task, const FieldNames& names = {});

// Width of a pooled row before finishing: n_cls_out for rank, d_model for none (per token), the
// model's output width otherwise.
int64_t pooled_width(const ModelDescription& model, Pooling p);

// How to run, not what to compute.
struct RunSettings {
  int64_t batch_tokens = 0;  // tokens per forward pass; 0 = default (4096, at least the longest input)
  int64_t batch_inputs = 0;  // inputs per forward pass at most (sentence-transformers' batch_size); 0 = no limit
  std::function<void(size_t done, size_t total)> progress;  // called after each forward pass
};

}  // namespace embed

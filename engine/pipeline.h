// The one path from inputs to rows, used by Context::embed, Context::rerank and the server's
// scheduler: tokenization and length limits turn inputs into sequences (per request); forward
// passes run sequences (possibly from many requests) that share PassOptions; finish_rows turns
// each pooled row into the requested output (Matryoshka truncation, normalization), per row.
// A row depends only on its own sequence and its request, never on what it was batched with.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/api.h"
#include "engine/request.h"
#include "engine/runner.h"

namespace embed {

// An error about one input of a request: `index` is its position in the request; too_long()
// when it is longer than the request's max_tokens and truncation was not asked for.
class InputError : public Error {
 public:
  InputError(ErrorKind kind, int64_t index, const std::string& message, bool too_long = false)
      : Error(kind, message), index_(index), too_long_(too_long) {}
  int64_t index() const { return index_; }
  bool too_long() const { return too_long_; }

 private:
  int64_t index_;
  bool too_long_;
};

// Rows [from, to) of a sequence's pooled output (one row, or one per token with Pooling::None)
// that add to output row `row`, each with this weight.
struct RowPart {
  int64_t row;
  int32_t from, to;
  float weight;
};

// The sequences of one request, in input order.
struct Tokenized {
  std::vector<SequenceInput> seqs;
  size_t truncated = 0;               // inputs cut to max_tokens
  std::vector<std::string> warnings;  // distinct tokenizer notes and a truncation summary
  // When inputs and sequences are not one to one (LongInputs::Chunk windows, late chunking):
  // per sequence, the output rows its pooled rows add to; a row is the weighted mean of what
  // adds to it. Empty: sequence i is row i.
  std::vector<std::vector<RowPart>> parts;
  int64_t n_rows = 0;
  std::vector<int64_t> row_offsets;   // late chunking: rows of input i are [off[i], off[i+1])
  std::vector<CharSpan> spans;        // late chunking: each row's chunk in its text
  std::vector<int32_t> input_tokens;  // with parts: tokens of each input's whole text
};

// Texts (Task::Embed): prompt + text, the model's special tokens, the request's length rule
// (error, truncation or windows) or late chunking. chunk_spans (late chunking): per text, the
// chunks as character spans (an empty list: the request's chunk_rule); null: the rule for all.
Tokenized tokenize_texts(const Model& m, const ResolvedRequest& r, const std::vector<std::string>& texts,
                         const std::vector<std::vector<CharSpan>>* chunk_spans = nullptr);
// Token ids given by the caller (OpenAI's token-array input): used as they are (no special
// tokens added, no prompt), cut at the request's truncation_direction when truncating.
Tokenized sequences_from_ids(const Model& m, const ResolvedRequest& r, std::vector<std::vector<int32_t>> ids);
// (query, document) pairs (Task::Rerank): the model's rerank template when it has one, else the
// tokenizer's pair layout; truncation shortens the document (the longer text first for pairs).
Tokenized tokenize_pairs(const Model& m, const ResolvedRequest& r, const std::string& query, const std::vector<std::string>& docs);

PassOptions pass_options(const ResolvedRequest& r);

// Forward passes of at most `budget` tokens (at least the longest sequence) and, when
// max_seqs > 0, at most max_seqs sequences, longest first: sorting keeps passes uniform, and rows
// do not depend on the grouping.
std::vector<std::vector<size_t>> plan_batches(const std::vector<SequenceInput>& seqs, int64_t budget, int64_t max_seqs = 0);
constexpr int64_t kDefaultBatchTokens = 4096;

// The output width of a row of `cols` pooled values.
inline int64_t finished_width(int64_t cols, const RowFinish& f) { return f.dims > 0 ? f.dims : cols; }
// rows x cols pooled values -> rows x finished_width(cols) outputs: the first `dims` values of each
// row divided by their norm (llama.cpp's embd_normalize codes: -1 none, 0 max-abs scaled to 32760,
// 1 L1, 2 L2, p > 2 p-norm; accumulated in double; a zero row stays zero). `out` may alias `in`.
void finish_rows(const float* in, int64_t rows, int64_t cols, const RowFinish& f, float* out);

// Quantizes finished float rows to f.precision (nothing for float32): e.data -> e.codes.
void quantize_output(Embeddings& e, const RowFinish& f);

// Runs the sequences of one request in batches and returns its rows in input order, finished.
Embeddings run_request(Runner& runner, const ResolvedRequest& r, Tokenized t, const RunSettings& s);

}  // namespace embed

// Inputs of a request as sequences, for every front end: tokenization and length limits turn
// texts, token ids or (query, document) pairs into sequences and the RowParts that say which rows
// they add to (windows, late chunks). What runs them is engine/executor.h; what turns their pooled
// outputs into rows is engine/row_assembly.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/runner.h"
#include "engine/types.h"

namespace embed {

class Model;  // engine/api.h

// An error about one input of a request: `index` is its position in the request; code()
// InputTooLong when it is longer than the request's max_tokens and truncation was not asked for.
class InputError : public Error {
 public:
  InputError(ErrorKind kind, int64_t index, const std::string& message, StatusCode code = StatusCode::Other)
      : Error(kind, message), index_(index), code_(code) {}
  int64_t index() const { return index_; }
  StatusCode code() const { return code_; }
  bool too_long() const { return code_ == StatusCode::InputTooLong; }

 private:
  int64_t index_;
  StatusCode code_;
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

}  // namespace embed

// The one executor under every front end (the embed command, the server, Python, the C++ API):
// it runs tokenized requests' sequences in forward passes (a causal model's sequence longer than a
// pass in pieces, with a KV cache) and hands each pass's pooled rows to each request's
// RowAssembly (engine/row_assembly.h). Context::embed / rerank run one request through run(); the
// server's Scheduler (engine/scheduler.h) is a queue that forms passes from many requests and
// hands each to run_pass(). Read-outs after the final hidden state belong in the Runner's pooling
// (PassOptions) and in RowAssembly, never in a second loop here.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/row_assembly.h"
#include "engine/runner.h"

namespace embed {

constexpr int64_t kDefaultBatchTokens = 4096;

// Forward passes of at most `budget` tokens (at least the longest sequence) and, when
// max_seqs > 0, at most max_seqs sequences, longest first: sorting keeps passes uniform, and rows
// do not depend on the grouping.
std::vector<std::vector<size_t>> plan_batches(const std::vector<SequenceInput>& seqs, int64_t budget, int64_t max_seqs = 0);

// One sequence of a pass: the request whose rows it feeds and its index among them.
struct PassInput {
  PassSink* rows;
  size_t seq;
  SequenceInput input;
};

class Executor {
 public:
  // `readout`: the model's read-out heads (Model::readout()), for requests that ask for them.
  explicit Executor(Runner& runner, const Readout* readout = nullptr) : runner_(runner), readout_(readout) {}
  // Whether a sequence longer than a pass can run in pieces: a causal model, without KV-Embedding
  // (its re-routing reads each sequence's last token, which only the last piece has). Otherwise a
  // pass grows to hold the longest sequence whole.
  bool runs_in_pieces(const PassOptions& pass) const;
  // One forward pass over `inputs`, all sharing `pass`; each sequence's pooled rows go to its
  // RowAssembly. A single sequence longer than `piece` tokens runs in pieces of `piece` tokens
  // when runs_in_pieces(pass). Throws what the runner throws (nothing is added then).
  void run_pass(std::vector<PassInput>& inputs, const PassOptions& pass, int64_t piece);
  // One request alone: its sequences in passes of RunSettings::batch_tokens (and batch_inputs),
  // its rows in input order, finished.
  Embeddings run(const ResolvedRequest& r, Tokenized t, const RunSettings& s);
  // The same passes with each sequence's outputs handed to `sink` (what run() does with a
  // RowAssembly): for readers of other per-sequence outputs, such as each layer's last-token state.
  void run(std::vector<SequenceInput> seqs, const PassOptions& pass, const RunSettings& s, PassSink& sink);
  Runner& runner() { return runner_; }

 private:
  Runner& runner_;
  const Readout* readout_;
};

}  // namespace embed

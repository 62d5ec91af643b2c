// From pooled forward-pass outputs to one request's rows: the one place where rows are assembled
// (a sequence's pooled row as it is, per-token rows, the weighted mean of long_inputs windows or of
// late chunking's token spans), then finished (Matryoshka, normalization) and quantized. Runs no
// forward pass itself (engine/executor.h feeds it); a row never depends on how its sequences were
// batched or in which order their passes ran.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/pipeline.h"
#include "engine/readout.h"

namespace embed {

// The output width of a row of `cols` pooled values.
inline int64_t finished_width(int64_t cols, const RowFinish& f) { return f.dims > 0 ? f.dims : cols; }
// rows x cols pooled values -> rows x finished_width(cols) outputs: the first `dims` values of each
// row divided by their norm (llama.cpp's embd_normalize codes: -1 none, 0 max-abs scaled to 32760,
// 1 L1, 2 L2, p > 2 p-norm; accumulated in double; a zero row stays zero). `out` may alias `in`.
void finish_rows(const float* in, int64_t rows, int64_t cols, const RowFinish& f, float* out);

// Quantizes finished float rows to f.precision (nothing for float32): e.data -> e.codes.
void quantize_output(Embeddings& e, const RowFinish& f);

// Where the executor hands each sequence's outputs of a pass: a request's RowAssembly, or a reader
// of other per-sequence outputs (Context::layer_states). Sequence `seq` of the receiver is
// sequence `j` of the pass that gave `o`; each sequence is added once, from any pass in any order.
class PassSink {
 public:
  virtual ~PassSink() = default;
  virtual void add(size_t seq, const RunOutput& o, size_t j) = 0;
};

// The rows of one request being assembled. Made from its Tokenized before its sequences go to
// forward passes; add() takes each sequence's pooled output once, from any pass in any order;
// finish() gives the rows in input order once every sequence was added.
class RowAssembly : public PassSink {
 public:
  // `readout`: the model's heads, needed when the request asks for sparse or colbert outputs
  // (resolve_request has checked that the model has them).
  RowAssembly(const ResolvedRequest& r, const Tokenized& t, const Readout* readout = nullptr);
  // Sequence `seq` of this request is sequence `j` of the pass that gave `o`.
  void add(size_t seq, const RunOutput& o, size_t j) override;
  // The finished rows; `runner` applies the model's projections to late chunking's pooled spans.
  Embeddings finish(Runner& runner);
  size_t sequences() const { return n_seqs_; }

 private:
  void add_combined(size_t seq, const RunOutput& o, size_t j);
  void add_readouts(size_t seq, const RunOutput& o, size_t j);
  ResolvedRequest request_;
  const Readout* readout_;
  std::vector<std::vector<int32_t>> ids_;  // each sequence's token ids, for the sparse read-out
  size_t n_seqs_;
  bool combined_, per_token_;
  std::vector<std::vector<RowPart>> parts_;
  // Combined rows: the pooled rows each sequence's parts read, kept until finish() so the means
  // are summed in sequence order whatever order the passes ran in.
  std::vector<std::vector<float>> part_rows_;
  Embeddings out_;
};

}  // namespace embed

// Read-outs after the final hidden state besides pooling: BGE-M3's sparse (lexical) weights and
// ColBERT multi-vectors (FlagEmbedding's BGEM3 definitions; tensors and keys in
// engine/arch/spec.h), and the scores FlagEmbedding's compute_score gives for them. They take the
// hidden states of the same forward pass that gives the dense vector: no second pipeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file.h"

namespace embed {

// Token ids with positive weights, ascending by id (each id once).
struct SparseRow {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// One L2-normalized vector per token after the first: rows x cols, row-major.
struct MultiVectorRow {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  const float* row(int64_t i) const { return data.data() + i * cols; }
};

// The heads a file carries, decoded to f32 on the host at load (they are small: d_model + 1 and
// (d_model + 1) x dim values).
class ReadoutHeads {
 public:
  // nullopt when the file has neither head. Throws embed::Error naming the tensor or key: a head
  // whose formula key is missing or not kM3Formula (another convention computes differently), a
  // shape that does not fit d_model, a type that cannot be decoded.
  static std::optional<ReadoutHeads> from_gguf(const gguf::File& f, const std::string& arch, int64_t d_model);

  bool has_sparse() const { return !sparse_w_.empty(); }
  bool has_colbert() const { return colbert_dim_ > 0; }
  int64_t colbert_dim() const { return colbert_dim_; }

  // hidden: n tokens x d_model; ids: the n token ids; dropped: ids whose weight never counts
  // (FlagEmbedding: <s>/CLS, </s>/EOS, <pad>, <unk>).
  SparseRow sparse(const float* hidden, const int32_t* ids, int64_t n, const std::vector<int32_t>& dropped) const;
  // Vectors of tokens 1..n-1 (after CLS), each L2-normalized.
  MultiVectorRow colbert(const float* hidden, int64_t n) const;

 private:
  int64_t d_model_ = 0, colbert_dim_ = 0;
  std::vector<float> sparse_w_, colbert_w_, colbert_b_;  // colbert_w_: [dim, d_model]
  float sparse_b_ = 0;
};

// FlagEmbedding's BGEM3FlagModel scores: sparse = sum over shared ids of the product of weights
// (compute_lexical_matching_score); ColBERT = mean over the query's vectors of the best dot product
// with the document's (colbert_score).
double sparse_score(const SparseRow& q, const SparseRow& d);
double colbert_score(const MultiVectorRow& q, const MultiVectorRow& d);
// compute_score's weighted hybrid: sum(w_i * s_i) / sum(w_i) over the modes given (dense, sparse, colbert).
double hybrid_score(double dense, double sparse, double colbert, const double weights[3]);

}  // namespace embed

// Read-outs after the final hidden state besides pooling: BGE-M3's sparse (lexical) weights and
// ColBERT multi-vectors (FlagEmbedding's BGEM3 definitions), SPLADE's sparse weights over the
// vocabulary (sentence-transformers' SparseEncoder: an MLM head, then max over tokens of
// log(1 + relu(logits))) — tensors and keys in engine/arch/spec.h — and the scores FlagEmbedding's
// compute_score gives for them. They take the hidden states of the same forward pass that gives
// the dense vector: no second pipeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/types.h"
#include "gguf/file.h"

namespace embed {

// The heads a file carries, decoded to f32 on the host at load (they are small: d_model + 1 and
// (d_model + 1) x dim values).
class ReadoutHeads {
 public:
  // nullopt when the file has no head. Throws embed::Error naming the tensor or key: a head whose
  // formula key is missing or names another formula (kM3Formula for cls.sparse / cls.colbert,
  // kSpladeFormula for mlm.*: another convention computes differently), a shape that does not fit
  // d_model or the vocabulary, a type that cannot be decoded, two sparse heads.
  static std::optional<ReadoutHeads> from_gguf(const gguf::File& f, const std::string& arch, int64_t d_model);

  bool has_sparse() const { return !sparse_w_.empty() || has_splade(); }
  bool has_splade() const { return splade_vocab_ > 0; }
  bool has_colbert() const { return colbert_dim_ > 0; }
  int64_t colbert_dim() const { return colbert_dim_; }

  // hidden: n tokens x d_model; ids: the n token ids.
  // BGE-M3: one weight per token, relu(W_s h + b_s); dropped: ids whose weight never counts
  // (FlagEmbedding: <s>/CLS, </s>/EOS, <pad>, <unk>); the largest weight per id.
  // SPLADE: weights over the vocabulary, max over all n tokens (special tokens included, as
  // SparseEncoder's SpladePooling masks only padding) of log(1 + relu(MLM logits)); `ids` and
  // `dropped` do not apply.
  SparseRow sparse(const float* hidden, const int32_t* ids, int64_t n, const std::vector<int32_t>& dropped) const;
  // Vectors of tokens 1..n-1 (after CLS), each L2-normalized.
  MultiVectorRow colbert(const float* hidden, int64_t n) const;

 private:
  SparseRow splade(const float* hidden, int64_t n) const;

  int64_t d_model_ = 0, colbert_dim_ = 0;
  std::vector<float> sparse_w_, colbert_w_, colbert_b_;  // colbert_w_: [dim, d_model]
  float sparse_b_ = 0;
  // SPLADE's MLM head: transform [d_model, d_model] + bias, LayerNorm (eps), decoder [vocab, d_model] + bias.
  int64_t splade_vocab_ = 0;
  std::vector<float> mlm_dense_w_, mlm_dense_b_, mlm_norm_w_, mlm_norm_b_, mlm_out_w_, mlm_out_b_;
  float mlm_eps_ = 0;
};

// A model's heads with the token ids its sparse weights never count (FlagEmbedding's unused_tokens:
// the tokenizer's <s> / CLS, </s> / EOS, <pad> and <unk>), found once at load.
struct Readout {
  ReadoutHeads heads;
  std::vector<int32_t> sparse_dropped;
};

// FlagEmbedding's BGEM3FlagModel scores: sparse = sum over shared ids of the product of weights
// (compute_lexical_matching_score); ColBERT = mean over the query's vectors of the best dot product
// with the document's (colbert_score).
double sparse_score(const SparseRow& q, const SparseRow& d);
double colbert_score(const MultiVectorRow& q, const MultiVectorRow& d);
// FlagEmbedding's compute_score for one (query, document) pair: each mode's score and the two
// weighted hybrids it reports ("sparse+dense", "colbert+sparse+dense").
struct M3Scores {
  double dense = 0, sparse = 0, colbert = 0, sparse_dense = 0, colbert_sparse_dense = 0;
};
// The scores of documents against a query from one encode of [query, documents...] (rows 0 and
// 1.., with dense rows L2-normalized, sparse and colbert read-outs): weights are dense, sparse,
// colbert (FlagEmbedding's weights_for_different_modes; its default is 1, 1, 1).
std::vector<M3Scores> m3_scores(const Embeddings& query_then_documents, const double weights[3]);
// The score a name picks ("dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense",
// compute_score's keys); false for another name.
bool m3_score_by_name(const M3Scores& s, const std::string& name, double* out);

// compute_score's weighted hybrid: sum(w_i * s_i) / sum(w_i) over the modes given (dense, sparse, colbert).
double hybrid_score(double dense, double sparse, double colbert, const double weights[3]);

}  // namespace embed

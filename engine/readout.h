// Read-outs after the final hidden state besides pooling: BGE-M3's sparse (lexical) weights and
// ColBERT multi-vectors (FlagEmbedding's BGEM3 definitions), SPLADE's sparse weights over the
// vocabulary (sentence-transformers' SparseEncoder: an MLM head, then max over tokens of
// log(1 + relu(logits))) — tensors and keys in engine/arch/spec.h — and the scores FlagEmbedding's
// compute_score gives for them. They take the hidden states of the same forward pass that gives
// the dense vector: no second pipeline. Their matrix products run on the backend's matmul kernels
// (engine/runner.cpp calls ReadoutHeads::compute after the forward); the host only finishes each
// sequence's rows (relu, ids dropped, max per id, log1p, L2 normalization).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/types.h"
#include "engine/weights.h"

namespace embed {

// What one forward pass computed for the read-outs asked of it, on the backend, before the host
// finishes each sequence's rows (sparse_row, colbert_row). Tokens are the pass's packed tokens.
struct ReadoutValues {
  std::vector<float> token_sparse;  // BGE-M3: [n_tokens] w_s . h + b_s of every token (relu is the host's)
  std::vector<float> colbert;       // [n_tokens, colbert_dim] W_c h + b_c of every token, CLS's included, not normalized
  int64_t colbert_dim = 0;
  std::vector<float> splade;        // SPLADE: [n_seqs, splade_vocab] per sequence, max(0, max over its tokens of the MLM logits)
  int64_t splade_vocab = 0;
};

// The heads a file carries, loaded once with the model's weights, in the backend's layout for its
// matmul kernels (WeightLoader: device copies on CUDA, packed panels on the CPU).
class ReadoutHeads {
 public:
  // nullopt when the file has no head. Throws embed::Error naming the tensor or key: a head whose
  // formula key is missing or names another formula (kM3Formula for cls.sparse / cls.colbert,
  // kSpladeFormula for mlm.*: another convention computes differently), a shape that does not fit
  // d_model or the vocabulary, a type the backend cannot use, two sparse heads.
  static std::optional<ReadoutHeads> from_gguf(WeightLoader& w, const std::string& arch, int64_t d_model);

  bool has_sparse() const { return !sparse_w_.empty() || has_splade(); }
  bool has_splade() const { return splade_vocab_ > 0; }
  bool has_colbert() const { return colbert_dim_ > 0; }
  int64_t colbert_dim() const { return colbert_dim_; }

  // The heads' products for every token of `hidden` [n_tokens, d_model] (the pass's final hidden
  // states; sequence s is rows [cu[s], cu[s+1])), run by fp's backend: one matmul per BGE-M3 head;
  // SPLADE's transform (matmul with GELU, LayerNorm) on all tokens, then its decoder over chunks
  // of tokens whose logits stay within kSpladeLogitBytes, each chunk max-reduced into its
  // sequences' rows on the host. Uses fp's workspace (released on return).
  void compute(ForwardPass& fp, const Tensor& hidden, const std::vector<int32_t>& cu, bool sparse, bool colbert, ReadoutValues& out) const;

  // The most bytes of SPLADE logits one decoder matmul writes ([tokens, vocab] f32).
  static constexpr int64_t kSpladeLogitBytes = int64_t(32) << 20;

 private:
  void splade(ForwardPass& fp, const Tensor& hidden, const std::vector<int32_t>& cu, ReadoutValues& out) const;

  int64_t d_model_ = 0, colbert_dim_ = 0;
  Tensor sparse_w_, sparse_b_;    // [1, d_model], [1, 1]
  Tensor colbert_w_, colbert_b_;  // [dim, d_model], [1, dim]
  // SPLADE's MLM head: transform [d_model, d_model] + bias, LayerNorm (eps), decoder [vocab, d_model] + bias.
  int64_t splade_vocab_ = 0;
  Tensor mlm_dense_w_, mlm_dense_b_, mlm_norm_w_, mlm_norm_b_, mlm_out_w_, mlm_out_b_;
  float mlm_eps_ = 0;
};

// One sequence's rows from a pass's ReadoutValues: sequence `seq` of the pass, its tokens at
// [first, first + n) of the pass, `ids` its n token ids.
// BGE-M3 (v.token_sparse): one weight per token, relu(w_s h + b_s); dropped: ids whose weight never
// counts (FlagEmbedding: <s>/CLS, </s>/EOS, <pad>, <unk>); the largest weight per id.
// SPLADE (v.splade): log(1 + the sequence's max) per vocabulary id, the positive ones (special
// tokens included, as SparseEncoder's SpladePooling masks only padding); `ids` and `dropped` do not apply.
SparseRow sparse_row(const ReadoutValues& v, int64_t seq, int64_t first, const int32_t* ids, int64_t n,
                     const std::vector<int32_t>& dropped);
// Vectors of tokens 1..n-1 (after CLS), each L2-normalized (in double).
MultiVectorRow colbert_row(const ReadoutValues& v, int64_t first, int64_t n);

// A model's heads with the token ids its sparse weights never count (FlagEmbedding's unused_tokens:
// the tokenizer's <s> / CLS, </s> / EOS, <pad> and <unk>), found once at load.
struct Readout {
  const ReadoutHeads* heads = nullptr;  // the LoadedModel's
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

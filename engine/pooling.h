// From final hidden states to one output row per sequence: pooling (mean, first/cls, last, hybrid), the
// rank (classifier) head and the post-pooling projections. Runs on the backend; the caller
// downloads the result once and finishes each row (engine/row_assembly.h: finish_rows). RowMeans is
// the host-side mean of rows (what one pass cannot pool: pieces, windows, late chunks).
#pragma once

#include <vector>

#include "engine/model.h"

namespace embed {

struct PoolSpec {
  Pooling pooling = Pooling::Mean;
  const float* token_weights = nullptr;  // [n_tokens] device, Mean only (0 = leave the token out)
};

// hidden [n_tokens, d_model] -> [n_rows, width] in workspace memory (or `hidden` itself for
// Pooling::None), where n_rows is n_seqs (n_tokens for Pooling::None) and width is n_cls_out for
// Rank, d_model for None, the model's output width otherwise.
Tensor pool_outputs(ForwardPass& fp, const ModelInfo& info, const Tensor& hidden, const PoolSpec& spec);

// The post-pooling projections (info.post_pool) of pooled rows [n, d_model] -> [n, output width];
// part of pool_outputs for mean/cls/last, for callers that pool themselves (a mean carried
// across the pieces of a long sequence).
Tensor project_pooled(ForwardPass& fp, const ModelInfo& info, Tensor pooled);

// Weighted means of rows of `cols` floats, summed in double in the order added: the one host-side
// mean of rows (mean pooling across the pieces of a long sequence, windows, late chunks). A row
// that got no weight is zero.
class RowMeans {
 public:
  RowMeans(int64_t rows, int64_t cols);
  void add(int64_t row, const float* x, double weight);
  std::vector<float> means() const;  // rows x cols
  int64_t cols() const { return cols_; }

 private:
  int64_t cols_;
  std::vector<double> sums_, weights_;
};

}  // namespace embed

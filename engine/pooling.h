// From final hidden states to one output row per sequence: pooling (mean, first/cls, last), the
// rank (classifier) head, the post-pooling projections, then normalization with Matryoshka
// truncation. Runs on the backend; the caller downloads the result once.
#pragma once

#include "engine/model.h"

namespace embed {

struct PoolSpec {
  Pooling pooling = Pooling::Mean;
  const float* token_weights = nullptr;  // [n_tokens] device, Mean only (0 = leave the token out)
  int normalize = 2;                     // llama.cpp embd_normalize code (-1 none, 0 max-abs int16, 1, 2, p)
  int dims = 0;                          // Matryoshka: keep the first `dims` values (0 = all)
};

// Output width before truncation for `pooling` (n_cls_out for Rank, d_model for None).
int64_t pooled_width(const ModelInfo& info, Pooling pooling);

// hidden [n_tokens, d_model] -> [n_rows, width] in workspace memory, where n_rows is n_seqs
// (n_tokens for Pooling::None) and width is dims (or the full width).
Tensor pool_outputs(ForwardPass& fp, const ModelInfo& info, const Tensor& hidden, const PoolSpec& spec);

}  // namespace embed

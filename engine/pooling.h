// From final hidden states to one output row per sequence: pooling (mean, first/cls, last, hybrid), the
// rank (classifier) head and the post-pooling projections. Runs on the backend; the caller
// downloads the result once and finishes each row (engine/pipeline.h: finish_rows).
#pragma once

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

}  // namespace embed

// Pooling, rank head, post-pool projections and normalization (llama.cpp build_pooling semantics;
// BERT cross-encoders: tanh(cls . h[CLS]) then cls.output, as HF BertPooler + classifier).
#include "engine/pooling.h"

#include "engine/ops.h"

namespace embed {
namespace {

using ops::pool_rows;

// (last token + mean over the tokens) / 2 per sequence: KV-Embedding's hybrid pooling.
Tensor hybrid(ForwardPass& fp, const Tensor& hidden, const float* weights) {
  Tensor last = pool_rows(fp, hidden, PoolKind::Last);
  Tensor mean = pool_rows(fp, hidden, PoolKind::Mean, weights);
  ops::add(fp, last, mean, last);
  ops::scale(fp, last, last, 0.5f);
  return last;
}

Tensor rank_head(ForwardPass& fp, const ModelInfo& info, const Tensor& hidden) {
  Tensor x = pool_rows(fp, hidden, info.rank_head.token, nullptr);
  if (!info.cls.empty()) {
    Tensor y = fp.ws.f32(x.rows, info.cls.rows);
    ops::linear(fp, x, info.cls, info.cls_b, y);
    ops::activation(fp, y, y, info.rank_head.activation);
    x = y;
  }
  if (!info.cls_norm.empty()) ops::layer_norm(fp, x, info.cls_norm, info.cls_norm_b, x, info.rank_head.norm_eps);
  if (!info.cls_out.empty()) {
    Tensor y = fp.ws.f32(x.rows, info.cls_out.rows);
    ops::linear(fp, x, info.cls_out, info.cls_out_b, y);
    x = y;
  }
  if (info.rank_head.softmax) {
    SoftmaxArgs a;
    a.x = x;
    a.y = x;
    fp.backend.softmax(a);
  }
  return x;
}

}  // namespace

Tensor pool_outputs(ForwardPass& fp, const ModelInfo& info, const Tensor& hidden, const PoolSpec& spec) {
  Tensor x;
  switch (spec.pooling) {
    case Pooling::None: x = hidden; break;
    case Pooling::Mean: x = pool_rows(fp, hidden, PoolKind::Mean, spec.token_weights); break;
    case Pooling::Cls: x = pool_rows(fp, hidden, PoolKind::First, nullptr); break;
    case Pooling::Last: x = pool_rows(fp, hidden, PoolKind::Last, nullptr); break;
    case Pooling::Rank: x = rank_head(fp, info, hidden); break;
    case Pooling::Hybrid: x = hybrid(fp, hidden, spec.token_weights); break;
  }
  if (spec.pooling != Pooling::None && spec.pooling != Pooling::Rank) x = project_pooled(fp, info, x);
  return x;
}

Tensor project_pooled(ForwardPass& fp, const ModelInfo& info, Tensor x) {
  for (const DenseLayer& d : info.post_pool) {
    Tensor y = fp.ws.f32(x.rows, d.w.rows);
    ops::linear(fp, x, d.w, d.b, y);
    if (d.act) ops::activation(fp, y, y, *d.act);
    x = y;
  }
  return x;
}

RowMeans::RowMeans(int64_t rows, int64_t cols)
    : cols_(cols), sums_(static_cast<size_t>(rows * cols), 0.0), weights_(static_cast<size_t>(rows), 0.0) {}

void RowMeans::add(int64_t row, const float* x, double weight) {
  double* acc = sums_.data() + row * cols_;
  for (int64_t c = 0; c < cols_; c++) acc[c] += weight * x[c];
  weights_[static_cast<size_t>(row)] += weight;
}

std::vector<float> RowMeans::means() const {
  std::vector<float> out(sums_.size());
  for (size_t i = 0; i < out.size(); i++) {
    const double w = weights_[i / static_cast<size_t>(cols_)];
    out[i] = w > 0 ? static_cast<float>(sums_[i] / w) : 0.0f;
  }
  return out;
}

}  // namespace embed

// BGE-M3 and SPLADE read-outs (see readout.h). The heads' products are matmuls on the pass's
// backend, with its kernels and their f32 accumulation, like every other product of the model:
// ColBERT is d_model x dim per token and SPLADE's decoder vocab x d_model per token (about the cost
// of a BERT-base body), which scalar host loops made the slowest part of a pass. What the host
// does per sequence is linear in its tokens (or its vocabulary row): relu, ids dropped, the max per
// id, log1p, and the ColBERT norms, in double.
#include "engine/readout.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
#include "engine/arch/spec.h"
#include "engine/ops.h"

namespace embed {
namespace {

void check_formula(const gguf::File& f, const std::string& key, const char* head, const char* want = arch::kM3Formula) {
  if (!f.has(key))
    fail(ErrorKind::Unsupported, f.path() + ": " + head + ".* without " + key + ": which formula applies is unknown (embed computes '" +
                                     want + "' for " + head + ".*), refused rather than guessed");
  const std::string formula = f.get<std::string>(key);
  if (formula != want)
    fail(ErrorKind::Unsupported, f.path() + ": " + key + " '" + formula + "' is not supported for " + head + ".* (only '" + want + "')");
}

// The rows of the 2-D matrix `name` (GGUF ne {cols, rows}), within [1, max_rows]: the size the
// file gives a head whose width no hyperparameter names (ColBERT's dim, the decoder's vocabulary).
int64_t matrix_rows(const gguf::File& f, const std::string& name, int64_t cols, int64_t max_rows) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' missing");
  if (t->ne[0] != cols || t->ne[2] != 1 || t->ne[3] != 1 || t->ne[1] < 1 || t->ne[1] > max_rows)
    fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' has shape " + t->shape_string() + "; expected {" + std::to_string(cols) +
                                ", 1.." + std::to_string(max_rows) + "}");
  return t->ne[1];
}

}  // namespace

std::optional<ReadoutHeads> ReadoutHeads::from_gguf(WeightLoader& w, const std::string& arch, int64_t d_model) {
  const gguf::File& f = w.file();
  const std::string sparse = std::string(arch::kSparseHead), colbert = std::string(arch::kColbertHead);
  const bool has_sparse = w.has(sparse + ".weight") || w.has(sparse + ".bias");
  const bool has_colbert = w.has(colbert + ".weight") || w.has(colbert + ".bias");
  const std::string mlm = std::string(arch::kMlmHead) + ".";
  bool has_mlm = false;
  for (const gguf::TensorInfo& t : f.tensors()) has_mlm = has_mlm || t.name.rfind(mlm, 0) == 0;
  if (!has_sparse && !has_colbert && !has_mlm) return std::nullopt;
  ReadoutHeads h;
  h.d_model_ = d_model;
  if (has_mlm) {
    if (has_sparse)
      fail(ErrorKind::Format, f.path() + ": both " + sparse + ".* and " + mlm + "* (two sparse read-outs); refused rather than one picked");
    check_formula(f, arch + "." + arch::kSparseFormulaKey, arch::kMlmHead, arch::kSpladeFormula);
    h.mlm_dense_w_ = w.matrix(mlm + "dense.weight", d_model, d_model);
    h.mlm_dense_b_ = w.vector(mlm + "dense.bias", d_model);
    h.mlm_norm_w_ = w.vector(mlm + "norm.weight", d_model);
    h.mlm_norm_b_ = w.vector(mlm + "norm.bias", d_model);
    // A decoder of its own, else tied to the word embeddings, loaded again as a matmul weight.
    const std::string decoder = w.has(mlm + "output.weight") ? mlm + "output.weight" : std::string("token_embd.weight");
    const int64_t vocab = matrix_rows(f, decoder, d_model, kMaxVocab);  // XLM-R's 250k fit
    h.mlm_out_w_ = w.matrix(decoder, vocab, d_model);
    h.mlm_out_b_ = w.vector(mlm + "output.bias", vocab);
    h.mlm_eps_ = f.get_or<float>(arch + ".attention.layer_norm_epsilon", 1e-12f);
    h.splade_vocab_ = vocab;
  }
  if (has_sparse) {
    check_formula(f, arch + "." + arch::kSparseFormulaKey, arch::kSparseHead);
    h.sparse_w_ = w.matrix(sparse + ".weight", 1, d_model);
    h.sparse_b_ = w.vector(sparse + ".bias", 1);
  }
  if (has_colbert) {
    check_formula(f, arch + "." + arch::kColbertFormulaKey, arch::kColbertHead);
    const int64_t dim = matrix_rows(f, colbert + ".weight", d_model, kMaxModelDim);
    h.colbert_w_ = w.matrix(colbert + ".weight", dim, d_model);
    h.colbert_b_ = w.vector(colbert + ".bias", dim);
    h.colbert_dim_ = dim;
  }
  return h;
}

void ReadoutHeads::compute(ForwardPass& fp, const Tensor& hidden, const std::vector<int32_t>& cu, bool sparse, bool colbert,
                           ReadoutValues& out) const {
  EMBED_CHECK(hidden.cols == d_model_ && !cu.empty() && cu.back() == hidden.rows, "ReadoutHeads::compute: hidden must be [cu.back(), d_model]");
  EMBED_CHECK(!sparse || has_sparse(), "sparse read-out without a sparse head");
  EMBED_CHECK(!colbert || has_colbert(), "ColBERT read-out without a ColBERT head");
  const int64_t n = hidden.rows;
  if (sparse && has_splade()) {
    splade(fp, hidden, cu, out);
  } else if (sparse) {
    Workspace::Scope scope(fp.ws);
    Tensor y = fp.ws.f32(n, 1);
    ops::linear(fp, hidden, sparse_w_, sparse_b_, y);
    out.token_sparse.resize(static_cast<size_t>(n));
    fp.backend.download(out.token_sparse.data(), y.data, out.token_sparse.size() * 4);
  }
  if (colbert) {
    Workspace::Scope scope(fp.ws);
    Tensor y = fp.ws.f32(n, colbert_dim_);
    ops::linear(fp, hidden, colbert_w_, colbert_b_, y);
    out.colbert_dim = colbert_dim_;
    out.colbert.resize(static_cast<size_t>(y.numel()));
    fp.backend.download(out.colbert.data(), y.data, out.colbert.size() * 4);
  }
}

void ReadoutHeads::splade(ForwardPass& fp, const Tensor& hidden, const std::vector<int32_t>& cu, ReadoutValues& out) const {
  const int64_t n = hidden.rows, v = splade_vocab_, n_seqs = static_cast<int64_t>(cu.size()) - 1;
  Workspace::Scope scope(fp.ws);
  // BertPredictionHeadTransform: gelu (erf, HF's "gelu") of dense, then LayerNorm.
  Tensor z = fp.ws.f32(n, d_model_);
  ops::linear_activation(fp, hidden, mlm_dense_w_, mlm_dense_b_, z, Activation::GeluErf);
  ops::layer_norm(fp, z, mlm_norm_w_, mlm_norm_b_, z, mlm_eps_);
  // Decoder logits, a chunk of tokens at a time; log1p(relu(.)) is monotone, so the max over a
  // sequence's tokens is taken on the logits (from 0: the relu).
  const int64_t chunk = std::clamp<int64_t>(kSpladeLogitBytes / (v * 4), 1, n);
  Tensor logits = fp.ws.f32(chunk, v);
  std::vector<float> rows(static_cast<size_t>(chunk * v));
  out.splade_vocab = v;
  out.splade.assign(static_cast<size_t>(n_seqs * v), 0.0f);
  int64_t s = 0;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t c = std::min(chunk, n - t0);
    const Tensor l = logits.slice_rows(0, c);
    ops::linear(fp, z.slice_rows(t0, c), mlm_out_w_, mlm_out_b_, l);
    fp.backend.download(rows.data(), l.data, static_cast<size_t>(c * v) * 4);
    for (int64_t i = 0; i < c; i++) {
      while (t0 + i >= cu[static_cast<size_t>(s) + 1]) s++;
      float* best = out.splade.data() + s * v;
      const float* x = rows.data() + i * v;
      for (int64_t o = 0; o < v; o++) best[o] = std::max(best[o], x[o]);
    }
  }
}

SparseRow sparse_row(const ReadoutValues& v, int64_t seq, int64_t first, const int32_t* ids, int64_t n,
                     const std::vector<int32_t>& dropped) {
  SparseRow r;
  if (v.splade_vocab > 0) {
    const float* best = v.splade.data() + seq * v.splade_vocab;
    for (int64_t o = 0; o < v.splade_vocab; o++) {
      const float w = std::log1p(best[o]);
      if (w > 0) r.ids.push_back(static_cast<int32_t>(o)), r.weights.push_back(w);
    }
    return r;
  }
  EMBED_CHECK(static_cast<int64_t>(v.token_sparse.size()) >= first + n, "sparse_row: the pass computed no sparse weights");
  std::map<int32_t, float> best;
  for (int64_t t = 0; t < n; t++) {
    if (std::find(dropped.begin(), dropped.end(), ids[t]) != dropped.end()) continue;
    const float w = v.token_sparse[static_cast<size_t>(first + t)];  // relu: only positive weights are kept
    if (!(w > 0)) continue;
    auto [it, fresh] = best.emplace(ids[t], w);
    if (!fresh) it->second = std::max(it->second, w);
  }
  for (const auto& [id, w] : best) r.ids.push_back(id), r.weights.push_back(w);
  return r;
}

MultiVectorRow colbert_row(const ReadoutValues& v, int64_t first, int64_t n) {
  EMBED_CHECK(v.colbert_dim > 0 && static_cast<int64_t>(v.colbert.size()) >= (first + n) * v.colbert_dim,
              "colbert_row: the pass computed no ColBERT vectors");
  MultiVectorRow r;
  r.rows = std::max<int64_t>(n - 1, 0);
  r.cols = v.colbert_dim;
  r.data.resize(static_cast<size_t>(r.rows * r.cols));
  for (int64_t t = 1; t < n; t++) {
    const float* x = v.colbert.data() + (first + t) * r.cols;
    double norm = 0;
    for (int64_t o = 0; o < r.cols; o++) norm += double(x[o]) * x[o];
    // torch.nn.functional.normalize: x / max(||x||, 1e-12).
    norm = std::max(std::sqrt(norm), 1e-12);
    float* y = r.data.data() + (t - 1) * r.cols;
    for (int64_t o = 0; o < r.cols; o++) y[o] = static_cast<float>(x[o] / norm);
  }
  return r;
}

double sparse_score(const SparseRow& q, const SparseRow& d) {
  double s = 0;
  size_t j = 0;
  for (size_t i = 0; i < q.ids.size(); i++) {
    while (j < d.ids.size() && d.ids[j] < q.ids[i]) j++;
    if (j < d.ids.size() && d.ids[j] == q.ids[i]) s += double(q.weights[i]) * d.weights[j];
  }
  return s;
}

double colbert_score(const MultiVectorRow& q, const MultiVectorRow& d) {
  if (q.rows == 0 || d.rows == 0 || q.cols != d.cols) return 0;
  double total = 0;
  for (int64_t i = 0; i < q.rows; i++) {
    double best = -INFINITY;
    for (int64_t j = 0; j < d.rows; j++) {
      double s = 0;
      for (int64_t k = 0; k < q.cols; k++) s += double(q.row(i)[k]) * d.row(j)[k];
      best = std::max(best, s);
    }
    total += best;
  }
  return total / static_cast<double>(q.rows);
}

double hybrid_score(double dense, double sparse, double colbert, const double weights[3]) {
  const double sum = weights[0] + weights[1] + weights[2];
  if (!(sum > 0)) fail(ErrorKind::InvalidArgument, "hybrid score weights must add up to more than 0");
  return (weights[0] * dense + weights[1] * sparse + weights[2] * colbert) / sum;
}

std::vector<M3Scores> m3_scores(const Embeddings& e, const double weights[3]) {
  EMBED_CHECK(e.rows >= 1 && e.sparse.size() == static_cast<size_t>(e.rows) && e.colbert.size() == static_cast<size_t>(e.rows),
              "m3_scores needs the dense, sparse and colbert read-outs of the query and each document");
  const double sd[3] = {weights[0], weights[1], 0.0};
  std::vector<M3Scores> out;
  for (int64_t i = 1; i < e.rows; i++) {
    M3Scores s;
    double dot = 0;
    for (int64_t k = 0; k < e.cols; k++) dot += static_cast<double>(e.row(0)[k]) * e.row(i)[k];
    s.dense = dot;
    s.sparse = sparse_score(e.sparse[0], e.sparse[static_cast<size_t>(i)]);
    s.colbert = colbert_score(e.colbert[0], e.colbert[static_cast<size_t>(i)]);
    s.sparse_dense = hybrid_score(s.dense, s.sparse, 0.0, sd);
    s.colbert_sparse_dense = hybrid_score(s.dense, s.sparse, s.colbert, weights);
    out.push_back(s);
  }
  return out;
}

bool m3_score_by_name(const M3Scores& s, const std::string& name, double* out) {
  if (name == "dense") *out = s.dense;
  else if (name == "sparse") *out = s.sparse;
  else if (name == "colbert") *out = s.colbert;
  else if (name == "sparse+dense") *out = s.sparse_dense;
  else if (name == "colbert+sparse+dense") *out = s.colbert_sparse_dense;
  else return false;
  return true;
}

}  // namespace embed

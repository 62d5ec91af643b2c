// BGE-M3 and SPLADE read-outs (see readout.h). BGE-M3's products are accumulated in double: the
// heads are a few dot products per token, next to the forward pass, so exactness costs nothing
// measurable. SPLADE's decoder is vocab x d_model per token (about the cost of the body for a
// BERT-base model at 30k tokens): double dot products in eight independent partial sums, which the
// compiler vectorizes.
#include "engine/readout.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
#include "engine/arch/spec.h"
#include "gguf/quants.h"
#include "gguf/types.h"

namespace embed {
namespace {

// Tensor `name` as f32 rows x cols (GGUF ne {cols, rows}); `rows` 0 = any (returned through it).
std::vector<float> read_f32(const gguf::File& f, const std::string& name, int64_t cols, int64_t* rows,
                            int64_t max_rows = int64_t(1) << 16) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' missing");
  const int64_t want_rows = *rows;
  if (t->ne[0] != cols || t->ne[2] != 1 || t->ne[3] != 1 || (want_rows > 0 && t->ne[1] != want_rows) || t->ne[1] < 1 ||
      t->ne[1] > max_rows)
    fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' has shape " + t->shape_string() + "; expected {" + std::to_string(cols) +
                                ", " + (want_rows > 0 ? std::to_string(want_rows) : std::string("dim")) + "}");
  if (!gguf::can_dequantize(t->type))
    fail(ErrorKind::Unsupported, f.path() + ": tensor '" + name + "' has type " + gguf::type_name(t->type) + ", which is not decoded");
  *rows = t->ne[1];
  std::vector<float> out(static_cast<size_t>(cols * *rows));
  const size_t rb = gguf::row_bytes(t->type, cols);
  for (int64_t r = 0; r < *rows; r++) gguf::dequantize_row(t->type, t->data + r * rb, out.data() + r * cols, cols);
  return out;
}

void check_formula(const gguf::File& f, const std::string& key, const char* head, const char* want = arch::kM3Formula) {
  if (!f.has(key))
    fail(ErrorKind::Unsupported, f.path() + ": " + head + ".* without " + key + ": which formula applies is unknown (embed computes '" +
                                     want + "' for " + head + ".*), refused rather than guessed");
  const std::string formula = f.get<std::string>(key);
  if (formula != want)
    fail(ErrorKind::Unsupported, f.path() + ": " + key + " '" + formula + "' is not supported for " + head + ".* (only '" + want + "')");
}

// Sum of a[i] * b[i] in double, in eight partial sums (vectorizable without reassociating one chain).
double dot(const float* a, const float* b, int64_t n) {
  double s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) s[k] += double(a[i + k]) * b[i + k];
  double t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; i++) t += double(a[i]) * b[i];
  return t;
}

}  // namespace

std::optional<ReadoutHeads> ReadoutHeads::from_gguf(const gguf::File& f, const std::string& arch, int64_t d_model) {
  const std::string sparse = std::string(arch::kSparseHead), colbert = std::string(arch::kColbertHead);
  const bool has_sparse = f.find_tensor(sparse + ".weight") || f.find_tensor(sparse + ".bias");
  const bool has_colbert = f.find_tensor(colbert + ".weight") || f.find_tensor(colbert + ".bias");
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
    int64_t rows = d_model, one = 1;
    h.mlm_dense_w_ = read_f32(f, mlm + "dense.weight", d_model, &rows);
    h.mlm_dense_b_ = read_f32(f, mlm + "dense.bias", d_model, &one);
    h.mlm_norm_w_ = read_f32(f, mlm + "norm.weight", d_model, &one);
    h.mlm_norm_b_ = read_f32(f, mlm + "norm.bias", d_model, &one);
    int64_t vocab = 0;
    const std::string decoder = f.find_tensor(mlm + "output.weight") ? mlm + "output.weight" : std::string("token_embd.weight");
    h.mlm_out_w_ = read_f32(f, decoder, d_model, &vocab, /*max_rows=*/int64_t(1) << 22);  // XLM-R's 250k
    h.mlm_out_b_ = read_f32(f, mlm + "output.bias", vocab, &one);
    h.mlm_eps_ = f.get_or<float>(arch + ".attention.layer_norm_epsilon", 1e-12f);
    h.splade_vocab_ = vocab;
  }
  if (has_sparse) {
    check_formula(f, arch + "." + arch::kSparseFormulaKey, arch::kSparseHead);
    int64_t one = 1;
    h.sparse_w_ = read_f32(f, sparse + ".weight", d_model, &one);
    const std::vector<float> b = read_f32(f, sparse + ".bias", 1, &one);
    h.sparse_b_ = b[0];
  }
  if (has_colbert) {
    check_formula(f, arch + "." + arch::kColbertFormulaKey, arch::kColbertHead);
    int64_t dim = 0, one = 0;
    h.colbert_w_ = read_f32(f, colbert + ".weight", d_model, &dim);
    h.colbert_b_ = read_f32(f, colbert + ".bias", dim, &one);
    if (one != 1) fail(ErrorKind::Format, f.path() + ": tensor '" + colbert + ".bias' is not one row of " + std::to_string(dim));
    h.colbert_dim_ = dim;
  }
  return h;
}

SparseRow ReadoutHeads::splade(const float* hidden, int64_t n) const {
  const int64_t d = d_model_, v = splade_vocab_;
  std::vector<float> best(static_cast<size_t>(v), 0.0f), z(static_cast<size_t>(d));
  for (int64_t t = 0; t < n; t++) {
    const float* h = hidden + t * d;
    // BertPredictionHeadTransform: gelu (erf, HF's "gelu") of dense, then LayerNorm.
    double mean = 0;
    for (int64_t o = 0; o < d; o++) {
      const double x = double(mlm_dense_b_[static_cast<size_t>(o)]) + dot(mlm_dense_w_.data() + o * d, h, d);
      z[static_cast<size_t>(o)] = static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
      mean += z[static_cast<size_t>(o)];
    }
    mean /= static_cast<double>(d);
    double var = 0;
    for (float x : z) var += (x - mean) * (x - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + mlm_eps_);
    for (int64_t o = 0; o < d; o++)
      z[static_cast<size_t>(o)] = static_cast<float>((z[static_cast<size_t>(o)] - mean) * inv * mlm_norm_w_[static_cast<size_t>(o)] +
                                                     mlm_norm_b_[static_cast<size_t>(o)]);
    // Decoder logits; log1p(relu(.)) is monotone, so the max is taken on the logits.
    for (int64_t o = 0; o < v; o++) {
      const float logit = static_cast<float>(dot(mlm_out_w_.data() + o * d, z.data(), d) + mlm_out_b_[static_cast<size_t>(o)]);
      best[static_cast<size_t>(o)] = std::max(best[static_cast<size_t>(o)], logit);
    }
  }
  SparseRow r;
  for (int64_t o = 0; o < v; o++) {
    const float w = std::log1p(best[static_cast<size_t>(o)]);
    if (w > 0) r.ids.push_back(static_cast<int32_t>(o)), r.weights.push_back(w);
  }
  return r;
}

SparseRow ReadoutHeads::sparse(const float* hidden, const int32_t* ids, int64_t n, const std::vector<int32_t>& dropped) const {
  EMBED_CHECK(has_sparse(), "sparse read-out without a sparse head");
  if (has_splade()) return splade(hidden, n);
  std::map<int32_t, float> best;
  for (int64_t t = 0; t < n; t++) {
    if (std::find(dropped.begin(), dropped.end(), ids[t]) != dropped.end()) continue;
    double s = sparse_b_;
    const float* h = hidden + t * d_model_;
    for (int64_t i = 0; i < d_model_; i++) s += double(sparse_w_[static_cast<size_t>(i)]) * h[i];
    const float w = static_cast<float>(s);  // relu: only positive weights are kept
    if (!(w > 0)) continue;
    auto [it, fresh] = best.emplace(ids[t], w);
    if (!fresh) it->second = std::max(it->second, w);
  }
  SparseRow r;
  for (const auto& [id, w] : best) r.ids.push_back(id), r.weights.push_back(w);
  return r;
}

MultiVectorRow ReadoutHeads::colbert(const float* hidden, int64_t n) const {
  EMBED_CHECK(has_colbert(), "ColBERT read-out without a ColBERT head");
  MultiVectorRow r;
  r.rows = std::max<int64_t>(n - 1, 0);
  r.cols = colbert_dim_;
  r.data.resize(static_cast<size_t>(r.rows * r.cols));
  std::vector<double> v(static_cast<size_t>(colbert_dim_));
  for (int64_t t = 1; t < n; t++) {
    const float* h = hidden + t * d_model_;
    double norm = 0;
    for (int64_t o = 0; o < colbert_dim_; o++) {
      const float* w = colbert_w_.data() + o * d_model_;
      double s = colbert_b_[static_cast<size_t>(o)];
      for (int64_t i = 0; i < d_model_; i++) s += double(w[i]) * h[i];
      v[static_cast<size_t>(o)] = s;
      norm += s * s;
    }
    // torch.nn.functional.normalize: x / max(||x||, 1e-12).
    norm = std::max(std::sqrt(norm), 1e-12);
    float* out = r.data.data() + (t - 1) * colbert_dim_;
    for (int64_t o = 0; o < colbert_dim_; o++) out[o] = static_cast<float>(v[static_cast<size_t>(o)] / norm);
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

// LoadedModel and Runner.
#include "engine/runner.h"

#include <algorithm>
#include <cmath>

#include "engine/kv_cache.h"

namespace embed {

std::shared_ptr<LoadedModel> LoadedModel::load(const std::string& path, const BackendOptions& backend) {
  return load(gguf::File::open(path), backend);
}

std::shared_ptr<LoadedModel> LoadedModel::load(gguf::File file, const BackendOptions& backend) {
  std::shared_ptr<LoadedModel> m(new LoadedModel());
  m->file_ = std::make_unique<gguf::File>(std::move(file));
  if (!m->file_->has("general.architecture"))
    fail(ErrorKind::Format, m->file_->path() + ": missing metadata key 'general.architecture' (is this a model file?)");
  m->backend_options_ = backend;
  BackendOptions loader = backend;
  loader.threads = 1;  // this instance only loads weights; contexts run with their own backends
  m->backend_ = create_backend(loader);
  m->weights_ = std::make_unique<WeightLoader>(*m->file_, *m->backend_);
  m->arch_ = create_architecture(*m->file_, *m->weights_);
  m->readout_ = ReadoutHeads::from_gguf(*m->weights_, m->arch_->info().arch, m->arch_->info().d_model);
  if (const gguf::TensorInfo* t = m->file_->find_tensor("token_types.weight")) m->n_token_types_ = t->ne[1];
  return m;
}

LoadedModel::~LoadedModel() {
  readout_.reset();
  arch_.reset();
  weights_.reset();  // releases device weights through backend_, which must still exist
}

Runner::Runner(std::shared_ptr<const LoadedModel> model, int threads) : model_(std::move(model)) {
  BackendOptions o = model_->backend_options();
  if (threads > 0) o.threads = threads;
  backend_ = create_backend(o);
  ws_ = std::make_unique<Workspace>(*backend_);
}

void Runner::validate(const std::vector<SequenceInput>& seqs, const PassOptions& o, RunOutput& out) const {
  const ModelInfo& info = model_->info();
  if (seqs.empty()) fail(ErrorKind::InvalidArgument, "no sequences to run");
  for (size_t s = 0; s < seqs.size(); s++) {
    const SequenceInput& q = seqs[s];
    const std::string where = "sequence " + std::to_string(s);
    if (q.ids.empty()) fail(ErrorKind::InvalidArgument, where + " is empty (a text must have at least one token)");
    if (static_cast<int64_t>(q.ids.size()) > info.n_ctx_train)
      fail(ErrorKind::InvalidArgument, where + " has " + std::to_string(q.ids.size()) + " tokens, more than the model's context length " +
                                           std::to_string(info.n_ctx_train) + " (truncate it)");
    for (int32_t id : q.ids)
      if (id < 0 || id >= info.n_vocab)
        fail(ErrorKind::InvalidArgument, where + ": token id " + std::to_string(id) + " is outside the vocabulary (size " +
                                             std::to_string(info.n_vocab) + ")");
    if (!q.type_ids.empty()) {
      if (q.type_ids.size() != q.ids.size()) fail(ErrorKind::InvalidArgument, where + ": type_ids and ids differ in length");
      for (int32_t t : q.type_ids)
        if (t < 0 || t >= model_->n_token_types())
          fail(ErrorKind::InvalidArgument, where + ": token type " + std::to_string(t) + " is outside [0, " +
                                               std::to_string(model_->n_token_types()) + ")");
    }
    if (!q.special.empty() && q.special.size() != q.ids.size())
      fail(ErrorKind::InvalidArgument, where + ": special mask and ids differ in length");
    if (o.exclude_special && q.special.empty())
      fail(ErrorKind::InvalidArgument, where + ": mean pooling without special tokens needs the special-token mask");
  }
  if (o.pooling == Pooling::Rank && info.n_cls_out() == 0)
    fail(ErrorKind::InvalidArgument, "rank pooling needs a classifier head (cls / cls.output tensors), which this model does not have");
  if (o.exclude_special && o.pooling != Pooling::Mean)
    fail(ErrorKind::InvalidArgument, "leaving special tokens out applies to mean pooling only");
  if (o.kv.on() && (!info.causal || o.kv.layer_begin < 0 || o.kv.layer_end >= info.n_layers))
    fail(ErrorKind::InvalidArgument, "KV-Embedding needs a causal model and layers inside 0.." + std::to_string(info.n_layers - 1));
  if (info.causal && o.pooling == Pooling::Cls)
    out.warnings.push_back(std::string("cls pooling on a causal model: ") + kCausalClsPoolingWhy);
}

// The host side of a packed batch: tokens [from, to) of each sequence added (a piece of a longer
// sequence keeps its positions in the sequence).
struct HostBatch {
  std::vector<int32_t> ids, pos, types, cu{0};
  std::vector<float> weights;  // exclude_special: 0 for special tokens, 1 otherwise
  int max_len = 0;

  void add(const SequenceInput& q, int64_t from, int64_t to, bool exclude_special) {
    for (int64_t i = from; i < to; i++) {
      ids.push_back(q.ids[i]);
      pos.push_back(static_cast<int32_t>(i));
      types.push_back(q.type_ids.empty() ? 0 : q.type_ids[i]);
      if (exclude_special) weights.push_back(q.special[i] ? 0.0f : 1.0f);
    }
    cu.push_back(cu.back() + static_cast<int32_t>(to - from));
    max_len = std::max(max_len, static_cast<int>(to - from));
  }
};

BatchView Runner::upload_batch(const HostBatch& h) {
  auto upload_ints = [&](const std::vector<int32_t>& v) {
    void* p = ws_->bytes(v.size() * 4);
    backend_->upload(p, v.data(), v.size() * 4);
    return static_cast<const int32_t*>(p);
  };
  BatchView bv;
  bv.n_tokens = static_cast<int64_t>(h.ids.size());
  bv.n_seqs = static_cast<int>(h.cu.size()) - 1;
  bv.max_seqlen = h.max_len;
  bv.ids = upload_ints(h.ids);
  bv.positions = upload_ints(h.pos);
  bv.type_ids = upload_ints(h.types);
  bv.cu_seqlens = upload_ints(h.cu);
  bv.cu_seqlens_host = h.cu.data();
  return bv;
}

const float* Runner::upload_floats(const std::vector<float>& v) {
  void* p = ws_->bytes(v.size() * 4);
  backend_->upload(p, v.data(), v.size() * 4);
  return static_cast<const float*>(p);
}

void Runner::check_finite(const RunOutput& out, const PassOptions& o) const {
  for (size_t i = 0; i < out.pooled.size(); i++)
    if (!std::isfinite(out.pooled[i]))
      fail(ErrorKind::Format, model_->file().path() + ": the model produced a non-finite value for sequence " +
                                  std::to_string(o.pooling == Pooling::None ? 0 : i / static_cast<size_t>(out.cols)) +
                                  " (its weights may be corrupt)");
}

RunOutput Runner::run(const std::vector<SequenceInput>& seqs, const PassOptions& o) {
  RunOutput out;
  validate(seqs, o, out);
  const ModelInfo& info = model_->info();
  HostBatch hb;
  for (const SequenceInput& q : seqs) hb.add(q, 0, static_cast<int64_t>(q.ids.size()), o.exclude_special);
  const int64_t n = static_cast<int64_t>(hb.ids.size());

  ws_->reset();
  const BatchView bv = upload_batch(hb);
  ForwardPass fp{*backend_, *ws_, bv, nullptr, o.kv};
  const int64_t n_seqs = static_cast<int64_t>(seqs.size()), d = info.d_model;
  const LayerTap last_rows = [&](int64_t layer, const Tensor& x) {
    float* dst = out.layer_last.data() + layer * n_seqs * d;
    for (int64_t s = 0; s < n_seqs; s++)
      backend_->download(dst + s * d, x.ptr<const float>() + (hb.cu[static_cast<size_t>(s) + 1] - 1) * d, static_cast<size_t>(d) * 4);
  };
  if (o.keep_layer_last) {
    out.layer_last.assign(static_cast<size_t>(info.n_layers * n_seqs * d), 0.0f);
    fp.layer_tap = &last_rows;
  }
  Tensor hidden = ws_->f32(n, info.d_model);
  model_->arch().forward(fp, hidden);
  PoolSpec ps;
  ps.pooling = o.pooling;
  if (o.exclude_special) ps.token_weights = upload_floats(hb.weights);
  const Tensor pooled = pool_outputs(fp, info, hidden, ps);
  out.rows = pooled.rows;
  out.cols = pooled.cols;
  out.pooled.resize(static_cast<size_t>(pooled.numel()));
  backend_->download(out.pooled.data(), pooled.data, out.pooled.size() * 4);
  if (o.keep_hidden) {
    out.hidden.resize(static_cast<size_t>(hidden.numel()));
    backend_->download(out.hidden.data(), hidden.data, out.hidden.size() * 4);
  }
  if (o.sparse_readout || o.colbert_readout) {
    const ReadoutHeads* heads = model_->readout();
    if (!heads) fail(ErrorKind::InvalidArgument, model_->file().path() + " has no read-out heads (sparse, ColBERT)");
    heads->compute(fp, hidden, hb.cu, o.sparse_readout, o.colbert_readout, out.readout);
  }
  out.cu_seqlens = hb.cu;
  check_finite(out, o);
  return out;
}

std::vector<float> Runner::project(const std::vector<float>& rows, int64_t n, int64_t* cols) {
  const ModelInfo& info = model_->info();
  if (info.post_pool.empty()) return rows;
  EMBED_CHECK(*cols == info.d_model && static_cast<int64_t>(rows.size()) == n * *cols, "Runner::project: rows must be [n, d_model]");
  ws_->reset();
  BatchView bv;
  ForwardPass fp{*backend_, *ws_, bv};
  const Tensor x{const_cast<float*>(upload_floats(rows)), DType::F32, backend_->device(), n, *cols};
  const Tensor y = project_pooled(fp, info, x);
  std::vector<float> out(static_cast<size_t>(y.numel()));
  backend_->download(out.data(), y.data, out.size() * 4);
  *cols = y.cols;
  return out;
}

RunOutput Runner::run_in_pieces(const SequenceInput& seq, const PassOptions& o, int64_t piece) {
  EMBED_CHECK(!o.keep_layer_last, "Runner::run_in_pieces: keep_layer_last needs the whole sequence in one pass");
  EMBED_CHECK(!o.sparse_readout && !o.colbert_readout, "Runner::run_in_pieces: the read-outs are computed in the pass that holds the whole sequence");
  RunOutput out;
  validate({seq}, o, out);
  const ModelInfo& info = model_->info();
  if (!info.causal)
    fail(ErrorKind::Unsupported, info.arch + " attends in both directions (earlier tokens see later ones): a sequence cannot run in pieces");
  if (o.kv.on())
    fail(ErrorKind::Unsupported, "KV-Embedding re-routes each sequence's last token, which a piece before the last does not have: "
                                 "a KV-Embedding sequence runs in one pass");
  const int64_t len = static_cast<int64_t>(seq.ids.size()), d = info.d_model;
  piece = std::clamp<int64_t>(piece, 1, len);
  KvCache cache(*backend_, len, piece);
  const bool per_token = o.pooling == Pooling::None, hybrid = o.pooling == Pooling::Hybrid;
  const bool mean = o.pooling == Pooling::Mean || hybrid;
  // The piece that holds the token a pooling reads: the first for cls (and a rank head reading the
  // first token), the last otherwise.
  const bool pool_first = o.pooling == Pooling::Cls || (o.pooling == Pooling::Rank && info.rank_head.token == PoolKind::First);
  // Mean pooling: the mean of the token rows (special ones left out on request), carried across
  // the pieces in double.
  RowMeans sum(1, mean ? d : 0);
  std::vector<float> rows;
  for (int64_t p = 0; p < len; p += piece) {
    const int64_t n = std::min(piece, len - p);
    ws_->reset();
    HostBatch hb;
    hb.add(seq, p, p + n, /*exclude_special=*/false);
    const BatchView bv = upload_batch(hb);
    ForwardPass fp{*backend_, *ws_, bv, &cache};
    Tensor hidden = ws_->f32(n, d);
    cache.begin_piece(n);
    model_->arch().forward(fp, hidden);
    cache.end_piece();
    if (per_token || mean || o.keep_hidden) {
      rows.resize(static_cast<size_t>(n * d));
      backend_->download(rows.data(), hidden.data, rows.size() * 4);
      if (per_token) out.pooled.insert(out.pooled.end(), rows.begin(), rows.end());
      if (o.keep_hidden) out.hidden.insert(out.hidden.end(), rows.begin(), rows.end());
      for (int64_t t = 0; mean && t < n; t++)
        if (!(o.exclude_special && seq.special[static_cast<size_t>(p + t)])) sum.add(0, rows.data() + t * d, 1.0);
    }
    if (!per_token && !mean && (pool_first ? p == 0 : p + n == len)) {
      PoolSpec ps;
      ps.pooling = o.pooling;
      const Tensor pooled = pool_outputs(fp, info, hidden, ps);
      out.rows = pooled.rows;
      out.cols = pooled.cols;
      out.pooled.resize(static_cast<size_t>(pooled.numel()));
      backend_->download(out.pooled.data(), pooled.data, out.pooled.size() * 4);
    }
  }
  if (per_token) {
    out.rows = len;
    out.cols = d;
  }
  if (mean) {
    std::vector<float> m = sum.means();
    // Hybrid: (the last token's row + the mean) / 2, as pool_outputs does it in f32; `rows` still
    // holds the last piece.
    const int64_t last = (len - 1) % piece;
    for (int64_t i = 0; hybrid && i < d; i++)
      m[static_cast<size_t>(i)] = (rows[static_cast<size_t>(last * d + i)] + m[static_cast<size_t>(i)]) * 0.5f;
    out.rows = 1;
    out.cols = d;
    out.pooled = project(m, 1, &out.cols);
  }
  out.cu_seqlens = {0, static_cast<int32_t>(len)};
  check_finite(out, o);
  return out;
}

}  // namespace embed

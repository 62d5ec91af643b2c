// LoadedModel and Runner.
#include "engine/runner.h"

#include <cmath>

namespace embed {

std::shared_ptr<LoadedModel> LoadedModel::load(const std::string& path, const BackendOptions& backend) {
  std::shared_ptr<LoadedModel> m(new LoadedModel());
  m->file_ = std::make_unique<gguf::File>(gguf::File::open(path));
  if (!m->file_->has("general.architecture"))
    fail(ErrorKind::Format, path + ": missing metadata key 'general.architecture' (is this a model file?)");
  m->backend_options_ = backend;
  BackendOptions loader = backend;
  loader.threads = 1;  // this instance only loads weights; contexts run with their own backends
  m->backend_ = create_backend(loader);
  m->weights_ = std::make_unique<WeightLoader>(*m->file_, *m->backend_);
  m->arch_ = create_architecture(*m->file_, *m->weights_);
  if (const gguf::TensorInfo* t = m->file_->find_tensor("token_types.weight")) m->n_token_types_ = t->ne[1];
  return m;
}

LoadedModel::~LoadedModel() {
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
    out.warnings.push_back("cls pooling on a causal model: the first token cannot see the rest of the text, so its vector "
                           "ignores the text (use last or mean pooling)");
}

RunOutput Runner::run(const std::vector<SequenceInput>& seqs, const PassOptions& o) {
  RunOutput out;
  validate(seqs, o, out);
  const ModelInfo& info = model_->info();

  // Host side of the packed batch.
  std::vector<int32_t> ids, pos, types, cu{0};
  std::vector<float> weights;
  int max_len = 0;
  for (const SequenceInput& q : seqs) {
    const int len = static_cast<int>(q.ids.size());
    for (int i = 0; i < len; i++) {
      ids.push_back(q.ids[i]);
      pos.push_back(i);
      types.push_back(q.type_ids.empty() ? 0 : q.type_ids[i]);
      if (o.exclude_special) weights.push_back(q.special[i] ? 0.0f : 1.0f);
    }
    cu.push_back(cu.back() + len);
    max_len = std::max(max_len, len);
  }
  const int64_t n = static_cast<int64_t>(ids.size());

  ws_->reset();
  auto upload_ints = [&](const std::vector<int32_t>& v) {
    void* p = ws_->bytes(v.size() * 4);
    backend_->upload(p, v.data(), v.size() * 4);
    return static_cast<const int32_t*>(p);
  };
  BatchView bv;
  bv.n_tokens = n;
  bv.n_seqs = static_cast<int>(seqs.size());
  bv.max_seqlen = max_len;
  bv.ids = upload_ints(ids);
  bv.positions = upload_ints(pos);
  bv.type_ids = upload_ints(types);
  bv.cu_seqlens = upload_ints(cu);
  bv.cu_seqlens_host = cu.data();
  ForwardPass fp{*backend_, *ws_, bv, o.kv};

  Tensor hidden = ws_->f32(n, info.d_model);
  model_->arch().forward(fp, hidden);
  PoolSpec ps;
  ps.pooling = o.pooling;
  if (o.exclude_special) {
    void* p = ws_->bytes(weights.size() * 4);
    backend_->upload(p, weights.data(), weights.size() * 4);
    ps.token_weights = static_cast<const float*>(p);
  }
  const Tensor pooled = pool_outputs(fp, info, hidden, ps);
  out.rows = pooled.rows;
  out.cols = pooled.cols;
  out.pooled.resize(static_cast<size_t>(pooled.numel()));
  backend_->download(out.pooled.data(), pooled.data, out.pooled.size() * 4);
  if (o.keep_hidden) {
    out.hidden.resize(static_cast<size_t>(hidden.numel()));
    backend_->download(out.hidden.data(), hidden.data, out.hidden.size() * 4);
  }
  out.cu_seqlens = cu;
  for (size_t i = 0; i < out.pooled.size(); i++)
    if (!std::isfinite(out.pooled[i]))
      fail(ErrorKind::Format, model_->file().path() + ": the model produced a non-finite value for sequence " +
                                  std::to_string(o.pooling == Pooling::None ? 0 : i / static_cast<size_t>(out.cols)) +
                                  " (its weights may be corrupt)");
  return out;
}

}  // namespace embed

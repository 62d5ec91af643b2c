// Public API: model loading and description, the Result boundary (no exception escapes), and
// Context's entry points, each a few lines over engine/pipeline.h.
#include "engine/api.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "engine/executor.h"
#include "engine/runner.h"
#include "tokenizer/tokenizer.h"

namespace embed {
namespace {

// The band `embed kv-layers -o` stored (kKvLayersKey), checked against the model.
void read_kv_band(const gguf::File& f, ModelDescription& d) {
  if (!f.has(kKvLayersKey)) return;
  const std::vector<int32_t> band = f.get_array<int32_t>(kKvLayersKey);
  if (band.size() != 2 || band[0] < 0 || band[0] > band[1] || band[1] >= d.n_layers)
    fail(ErrorKind::Format, f.path() + ": " + kKvLayersKey + " must be [first, last] layers inside 0-" + std::to_string(d.n_layers - 1));
  d.kv_layers = std::make_pair(band[0], band[1]);
  if (f.has(kKvDimensionsKey)) d.layer_dimensions = f.get_array<float>(kKvDimensionsKey);
}

// Runs `body`, turning any exception into a Status (with the index of the input at fault).
template <class T, class F>
Result<T> guarded(F&& body) {
  try {
    return body();
  } catch (const InputError& e) {
    return Status{e.kind(), e.what(), e.index(), e.code()};
  } catch (const Error& e) {
    return Status{e.kind(), e.what(), -1};
  } catch (const std::bad_alloc&) {
    return Status{ErrorKind::OutOfMemory, "out of memory", -1};
  } catch (const std::exception& e) {
    return Status{ErrorKind::InvalidArgument, e.what(), -1};
  }
}

void refuse_hidden_states(const Request& r) {
  if (r.hidden_states) fail(ErrorKind::InvalidArgument, "hidden_states applies to Context::run, not to embed or rerank");
}

}  // namespace

// ---- Model ----

Model::~Model() = default;

const gguf::File& Model::gguf_file() const { return loaded_->file(); }

std::string resolve_model_path(const std::string& model) {
  if (!model.empty() && model != "default") return model;
  if (const char* env = std::getenv("EMBED_MODEL"); env && *env) return env;
  const char* cache = std::getenv("EMBED_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir = cache && *cache ? std::string(cache) : std::string(home ? home : ".") + "/.cache/embed";
  const std::string path = dir + "/models/all-MiniLM-L6-v2-f16.gguf";
  if (!std::filesystem::is_regular_file(path))
    fail(ErrorKind::Io, "no model given and the default model is not installed at " + path +
                            ": run `tools/models.sh default` once, or pass a GGUF file");
  return path;
}

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const ModelOptions& o) {
  return guarded<std::shared_ptr<const Model>>([&] { return from_file(gguf::File::open(resolve_model_path(path)), o); });
}

Result<std::shared_ptr<const Model>> Model::load(gguf::File&& file, const ModelOptions& o) {
  return guarded<std::shared_ptr<const Model>>([&] { return from_file(std::move(file), o); });
}

std::shared_ptr<const Model> Model::from_file(gguf::File file, const ModelOptions& o) {
  std::shared_ptr<Model> m(new Model());
  const std::string path = file.path();
  BackendOptions bo;
  bo.device = o.device;
  bo.threads = o.threads;
  bo.cuda_device = o.cuda_device;
  bo.llama_cpp_rounding = o.llama_cpp_rounding;
  bo.cpu_isa = o.cpu_isa;
  bo.compute_type = o.compute_type;
  m->loaded_ = LoadedModel::load(std::move(file), bo);
  m->options_ = o;
  const gguf::File& f = m->loaded_->file();
  if (f.has("tokenizer.ggml.model")) m->tokenizer_ = tok::Tokenizer::from_gguf(f);
  m->rerank_template_ = f.get_or<std::string>("tokenizer.chat_template.rerank", "");
  const ModelInfo& info = m->loaded_->info();
  ModelDescription& d = m->desc_;
  d.path = path;
  d.arch = info.arch;
  d.tokenizer = m->tokenizer_ ? tok::kind_name(m->tokenizer_->kind()) : "none";
  d.n_vocab = info.n_vocab;
  d.d_model = info.d_model;
  d.n_layers = info.n_layers;
  d.n_ctx = info.n_ctx_train;
  d.embedding_dim = info.n_embd_out();
  d.causal = info.causal;
  d.default_pooling = info.default_pooling;
  d.n_cls_out = info.n_cls_out();
  d.cls_labels = info.cls_labels;
  d.has_rerank_template = !m->rerank_template_.empty();
  d.rank_probability = info.rank_head.softmax;
  // A vocabulary larger than the embedding table gives ids the model has no row for: the file's
  // tokenizer is not this model's (rows beyond the vocabulary are padding, as in Gemma, and fine).
  if (m->tokenizer_ && static_cast<int64_t>(m->tokenizer_->vocab_size()) > info.n_vocab)
    fail(ErrorKind::Format, path + ": the tokenizer has " + std::to_string(m->tokenizer_->vocab_size()) + " tokens but token_embd has " +
                                std::to_string(info.n_vocab) + " rows: the vocabulary does not belong to these weights");
  if (const ReadoutHeads* heads = m->loaded_->readout()) {
    d.sparse_head = heads->has_sparse();
    d.colbert_dim = heads->colbert_dim();
    m->readout_ = Readout{heads, {}};
    if (const tok::Tokenizer* tk = m->tokenizer_.get())
      for (int32_t id : {tk->cls() >= 0 ? tk->cls() : tk->bos(), tk->eos() >= 0 ? tk->eos() : tk->sep(), tk->pad(), tk->unk()})
        if (id >= 0) m->readout_->sparse_dropped.push_back(id);
  }
  d.prompts = read_model_prompts(f);
  d.kernels = m->loaded_->kernel_level();
  d.compute_type = o.compute_type;
  read_kv_band(f, d);
  return m;
}

// ---- TokenBatch / BatchResult ----

void TokenBatch::add(int32_t seq_id, std::vector<int32_t> ids, std::vector<int32_t> type_ids, std::vector<uint8_t> special) {
  seqs_.push_back(Seq{seq_id, std::move(ids), std::move(type_ids), std::move(special)});
}

size_t BatchResult::slot(int32_t seq_id) const {
  auto it = index_.find(seq_id);
  EMBED_CHECK(it != index_.end(), "BatchResult: unknown sequence id " + std::to_string(seq_id));
  return it->second;
}

const float* BatchResult::pooled(int32_t seq_id) const {
  const size_t s = slot(seq_id);
  const int64_t row = per_token_ ? token_offsets_[s] : static_cast<int64_t>(s);
  return pooled_.data() + row * cols_;
}

const float* BatchResult::hidden(int32_t seq_id) const {
  EMBED_CHECK(!hidden_.empty(), "BatchResult::hidden needs Request::hidden_states");
  return hidden_.data() + token_offsets_[slot(seq_id)] * d_model_;
}

int64_t BatchResult::n_tokens(int32_t seq_id) const {
  const size_t s = slot(seq_id);
  return token_offsets_[s + 1] - token_offsets_[s];
}

// ---- Context ----

Context::Context(std::shared_ptr<const Model> model, int threads) : model_(std::move(model)) {
  runner_ = std::make_unique<Runner>(model_->loaded_, threads > 0 ? threads : model_->options_.threads);
}

Context::~Context() = default;

Runner& Context::runner() { return *runner_; }

Result<Embeddings> Context::embed(const std::vector<std::string>& texts, const Request& r, const RunSettings& s) {
  return guarded<Embeddings>([&] {
    refuse_hidden_states(r);
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Embed);
    return Executor(*runner_, model_->readout()).run(rr, tokenize_texts(*model_, rr, texts), s);
  });
}

Result<Embeddings> Context::embed(const std::vector<std::string>& texts, const std::vector<std::vector<CharSpan>>& chunk_spans,
                                  const Request& r, const RunSettings& s) {
  return guarded<Embeddings>([&] {
    refuse_hidden_states(r);
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Embed);
    return Executor(*runner_, model_->readout()).run(rr, tokenize_texts(*model_, rr, texts, &chunk_spans), s);
  });
}

Result<Embeddings> Context::embed_ids(std::vector<std::vector<int32_t>> ids, const Request& r, const RunSettings& s) {
  return guarded<Embeddings>([&] {
    refuse_hidden_states(r);
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Embed);
    return Executor(*runner_, model_->readout()).run(rr, sequences_from_ids(*model_, rr, std::move(ids)), s);
  });
}

Result<LayerStates> Context::layer_states(const std::vector<std::string>& texts, const Request& r, const RunSettings& s) {
  return guarded<LayerStates>([&] {
    refuse_hidden_states(r);
    if (r.kv_embedding || r.late_chunking || r.long_inputs != LongInputs::Refuse)
      fail(ErrorKind::InvalidArgument, "layer_states reads the plain model: leave out kv_embedding, late_chunking and long_inputs");
    if (r.precision != Precision::Float32) fail(ErrorKind::InvalidArgument, "layer_states gives float states: leave out precision");
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Embed);
    Tokenized t = tokenize_texts(*model_, rr, texts);
    const ModelDescription& d = model_->describe();
    LayerStates out;
    out.n_layers = d.n_layers;
    out.rows = static_cast<int64_t>(t.seqs.size());
    out.d_model = d.d_model;
    out.data.resize(static_cast<size_t>(out.n_layers * out.rows * out.d_model));
    for (const SequenceInput& q : t.seqs) out.n_tokens.push_back(static_cast<int32_t>(q.ids.size()));
    PassOptions pass = pass_options(rr);
    pass.pooling = Pooling::Last;  // cheapest pooling; the pooled rows are not used
    pass.keep_layer_last = true;
    // Each sequence's last-token state after every block, into its rows of out.data.
    struct LayerSink : PassSink {
      LayerStates& out;
      explicit LayerSink(LayerStates& o) : out(o) {}
      void add(size_t seq, const RunOutput& o, size_t j) override {
        const int64_t n = static_cast<int64_t>(o.cu_seqlens.size()) - 1;
        for (int64_t l = 0; l < out.n_layers; l++)
          std::copy_n(o.layer_last.data() + (l * n + static_cast<int64_t>(j)) * out.d_model, out.d_model,
                      out.data.data() + (l * out.rows + static_cast<int64_t>(seq)) * out.d_model);
      }
    } sink(out);
    Executor(*runner_, model_->readout()).run(std::move(t.seqs), pass, s, sink);
    return out;
  });
}

Result<std::vector<float>> Context::rerank(const std::string& query, const std::vector<std::string>& documents, const Request& r,
                                           const RunSettings& s) {
  return guarded<std::vector<float>>([&] {
    refuse_hidden_states(r);
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Rerank);
    const Embeddings e = Executor(*runner_, model_->readout()).run(rr, tokenize_pairs(*model_, rr, query, documents), s);
    // The first output of the rank head: the score (P(yes) after the yes/no softmax).
    std::vector<float> scores(static_cast<size_t>(e.rows));
    for (int64_t i = 0; i < e.rows; i++) scores[i] = e.row(i)[0];
    return scores;
  });
}

Result<BatchResult> Context::run(const TokenBatch& batch, const Request& r) {
  return guarded<BatchResult>([&] {
    if (r.precision != Precision::Float32)
      fail(ErrorKind::InvalidArgument, std::string("precision ") + precision_name(r.precision) + " applies to embed and embed_ids; run gives float rows");
    if (r.outputs.sparse || r.outputs.colbert)
      fail(ErrorKind::InvalidArgument, "sparse and colbert outputs come from embed and encode; run gives pooled rows and hidden states");
    const ResolvedRequest rr = resolve_request(model_->describe(), r, Task::Embed);
    BatchResult res;
    std::vector<SequenceInput> seqs;
    for (const TokenBatch::Seq& s : batch.seqs_) {
      if (!res.index_.emplace(s.id, seqs.size()).second)
        fail(ErrorKind::InvalidArgument, "sequence id " + std::to_string(s.id) + " appears twice in the batch");
      seqs.push_back(SequenceInput{s.ids, s.type_ids, s.special});
    }
    RunOutput o = runner_->run(seqs, pass_options(rr));
    res.cols_ = finished_width(o.cols, rr.finish);
    res.pooled_.resize(static_cast<size_t>(o.rows * res.cols_));
    finish_rows(o.pooled.data(), o.rows, o.cols, rr.finish, res.pooled_.data());
    res.d_model_ = model_->describe().d_model;
    res.per_token_ = rr.pooling == Pooling::None;
    res.hidden_ = std::move(o.hidden);
    res.token_offsets_.assign(o.cu_seqlens.begin(), o.cu_seqlens.end());
    res.warnings_ = std::move(o.warnings);
    return res;
  });
}

}  // namespace embed

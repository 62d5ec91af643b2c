// Public API: tokenization, length handling, batching by token budget (longest first, results
// restored to input order), the rerank prompt, and the Result boundary (no exception escapes).
#include "engine/api.h"

#include <algorithm>
#include <numeric>

#include "engine/runner.h"
#include "tokenizer/tokenizer.h"

namespace embed {
namespace {

constexpr int64_t kDefaultBatchTokens = 4096;

// Runs `body`, turning any exception into a Status (with the index of the input at fault).
template <class T, class F>
Result<T> guarded(int64_t* index, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    return Status{e.kind(), e.what(), *index};
  } catch (const std::bad_alloc&) {
    return Status{ErrorKind::OutOfMemory, "out of memory", *index};
  } catch (const std::exception& e) {
    return Status{ErrorKind::InvalidArgument, e.what(), *index};
  }
}

void add_warning(std::vector<std::string>& out, const std::string& w) {
  if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
}

// Sequences grouped into forward passes of at most `budget` tokens, longest first (sorting by
// length keeps passes uniform; the vectors do not depend on the grouping).
std::vector<std::vector<size_t>> plan_batches(const std::vector<SequenceInput>& seqs, int64_t budget) {
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].ids.size() > seqs[b].ids.size(); });
  std::vector<std::vector<size_t>> batches;
  int64_t used = 0;
  for (size_t i : order) {
    const int64_t n = static_cast<int64_t>(seqs[i].ids.size());
    if (batches.empty() || used + n > budget) {
      batches.emplace_back();
      used = 0;
    }
    batches.back().push_back(i);
    used += n;
  }
  return batches;
}

int64_t resolve_max_tokens(int64_t requested, int64_t n_ctx) {
  if (requested < 0) fail(ErrorKind::InvalidArgument, "max_tokens must be positive");
  if (requested > n_ctx)
    fail(ErrorKind::InvalidArgument, "max_tokens " + std::to_string(requested) + " is larger than the model's context length " +
                                         std::to_string(n_ctx));
  return requested > 0 ? requested : n_ctx;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

// ---- Model ----

Model::~Model() = default;

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const ModelOptions& o) {
  int64_t index = -1;
  return guarded<std::shared_ptr<const Model>>(&index, [&]() -> std::shared_ptr<const Model> {
    std::shared_ptr<Model> m(new Model());
    BackendOptions bo;
    bo.device = o.device;
    bo.threads = o.threads;
    bo.cuda_device = o.cuda_device;
    bo.llama_cpp_rounding = o.llama_cpp_rounding;
    bo.cpu_isa = o.cpu_isa;
    bo.compute_type = o.compute_type;
    m->loaded_ = LoadedModel::load(path, bo);
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
    d.kernels = m->loaded_->kernel_level();
    d.compute_type = o.compute_type;
    return m;
  });
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
  EMBED_CHECK(!hidden_.empty(), "BatchResult::hidden needs BatchOptions::hidden_states");
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

Result<Embeddings> Context::embed(const std::vector<std::string>& texts, const EmbedOptions& o) {
  int64_t index = -1;
  return guarded<Embeddings>(&index, [&]() -> Embeddings {
    const ModelDescription& d = model_->describe();
    if (!model_->tokenizer_) fail(ErrorKind::Unsupported, d.path + " has no tokenizer metadata: use run() with token ids");
    const int64_t max_tokens = resolve_max_tokens(o.max_tokens, d.n_ctx);
    Embeddings out;
    std::vector<SequenceInput> seqs(texts.size());
    size_t truncated = 0;
    for (size_t i = 0; i < texts.size(); i++) {
      index = static_cast<int64_t>(i);
      tok::Encoding e = model_->tokenizer().encode(o.prefix + texts[i]);
      if (e.ids.empty()) fail(ErrorKind::InvalidArgument, "text " + std::to_string(i) + " gives no tokens");
      if (static_cast<int64_t>(e.ids.size()) > max_tokens) {
        if (!o.truncate)
          fail(ErrorKind::InvalidArgument, "text has " + std::to_string(e.ids.size()) + " tokens, more than the limit of " +
                                               std::to_string(max_tokens) + " tokens");
        // Asked for: one summary warning below rather than the tokenizer's note per text.
        const size_t notes = e.warnings.size();
        model_->tokenizer().truncate(e, static_cast<size_t>(max_tokens));
        e.warnings.resize(notes);
        truncated++;
      }
      for (const std::string& w : e.warnings) add_warning(out.warnings, w);
      seqs[i] = SequenceInput{std::move(e.ids), std::move(e.type_ids), std::move(e.special)};
      out.n_tokens.push_back(static_cast<int32_t>(seqs[i].ids.size()));
    }
    index = -1;
    if (truncated)
      out.warnings.push_back(std::to_string(truncated) + " of " + std::to_string(texts.size()) + " texts were longer than " +
                             std::to_string(max_tokens) + " tokens and were truncated");
    RunOptions ro;
    ro.pooling = o.pooling.value_or(d.default_pooling);
    ro.normalize = o.normalize;
    ro.dims = o.dims;
    ro.exclude_special = o.exclude_special;
    const bool per_token = ro.pooling == Pooling::None;
    int64_t longest = 0, total = 0;
    for (const SequenceInput& s : seqs) {
      longest = std::max<int64_t>(longest, static_cast<int64_t>(s.ids.size()));
      total += static_cast<int64_t>(s.ids.size());
    }
    if (per_token) {
      out.row_offsets.push_back(0);
      for (const SequenceInput& s : seqs) out.row_offsets.push_back(out.row_offsets.back() + static_cast<int64_t>(s.ids.size()));
    }
    out.rows = per_token ? total : static_cast<int64_t>(texts.size());
    size_t done = 0;
    for (const std::vector<size_t>& batch : plan_batches(seqs, std::max(longest, o.batch_tokens > 0 ? o.batch_tokens : kDefaultBatchTokens))) {
      std::vector<SequenceInput> part;
      for (size_t i : batch) part.push_back(seqs[i]);
      const RunOutput r = runner_->run(part, ro);
      for (const std::string& w : r.warnings) add_warning(out.warnings, w);
      if (out.data.empty()) {
        out.cols = r.cols;
        out.data.resize(static_cast<size_t>(out.rows * out.cols));
      }
      for (size_t j = 0; j < batch.size(); j++) {
        const int64_t dst = per_token ? out.row_offsets[batch[j]] : static_cast<int64_t>(batch[j]);
        const int64_t src = per_token ? r.cu_seqlens[j] : static_cast<int64_t>(j);
        const int64_t n = per_token ? r.cu_seqlens[j + 1] - r.cu_seqlens[j] : 1;
        std::copy_n(r.pooled.begin() + src * r.cols, n * r.cols, out.data.begin() + dst * out.cols);
      }
      done += batch.size();
      if (o.progress) o.progress(done, texts.size());
    }
    return out;
  });
}

Result<std::vector<float>> Context::rerank(const std::string& query, const std::vector<std::string>& documents,
                                           const RerankOptions& o) {
  int64_t index = -1;
  return guarded<std::vector<float>>(&index, [&]() -> std::vector<float> {
    const ModelDescription& d = model_->describe();
    if (!model_->tokenizer_) fail(ErrorKind::Unsupported, d.path + " has no tokenizer metadata");
    if (d.n_cls_out == 0)
      fail(ErrorKind::InvalidArgument, d.path + " has no classifier head (cls / cls.output): it is not a reranker");
    const tok::Tokenizer& tk = model_->tokenizer();
    const int64_t max_tokens = resolve_max_tokens(o.max_tokens, d.n_ctx);
    std::vector<SequenceInput> seqs;
    for (size_t i = 0; i < documents.size(); i++) {
      index = static_cast<int64_t>(i);
      tok::Encoding e;
      if (!model_->rerank_template_.empty()) {
        // The model's own prompt (Qwen3-Reranker): special-token text in the template is parsed.
        tok::EncodeOptions eo;
        eo.add_special = false;
        eo.parse_special = true;
        std::string doc = documents[i];
        for (;;) {
          const std::string prompt = replace_all(replace_all(model_->rerank_template_, "{query}", query), "{document}", doc);
          e = tk.encode(prompt, eo);
          if (static_cast<int64_t>(e.ids.size()) <= max_tokens) break;
          if (!o.truncate || doc.empty())
            fail(ErrorKind::InvalidArgument, "query + document " + std::to_string(i) + " need " + std::to_string(e.ids.size()) +
                                                 " tokens, more than " + std::to_string(max_tokens));
          // Drop as many document tokens as the prompt is over the limit, then re-check.
          const tok::Encoding de = tk.encode(doc, tok::EncodeOptions{false, false, 0, tok::Overflow::Truncate});
          const int64_t keep = std::max<int64_t>(0, static_cast<int64_t>(de.ids.size()) - (static_cast<int64_t>(e.ids.size()) - max_tokens));
          doc = keep > 0 ? doc.substr(0, de.end[static_cast<size_t>(keep - 1)]) : std::string();
        }
      } else {
        tok::EncodeOptions eo;
        eo.max_tokens = static_cast<size_t>(max_tokens);
        eo.overflow = o.truncate ? tok::Overflow::Truncate : tok::Overflow::Error;
        e = tk.encode_pair(query, documents[i], eo);
      }
      seqs.push_back(SequenceInput{std::move(e.ids), std::move(e.type_ids), std::move(e.special)});
    }
    index = -1;
    RunOptions ro;
    ro.pooling = Pooling::Rank;
    ro.normalize = -1;
    std::vector<float> scores(documents.size());
    int64_t longest = 0;
    for (const SequenceInput& s : seqs) longest = std::max<int64_t>(longest, static_cast<int64_t>(s.ids.size()));
    for (const std::vector<size_t>& batch : plan_batches(seqs, std::max(longest, o.batch_tokens > 0 ? o.batch_tokens : kDefaultBatchTokens))) {
      std::vector<SequenceInput> part;
      for (size_t i : batch) part.push_back(seqs[i]);
      const RunOutput r = runner_->run(part, ro);
      for (size_t j = 0; j < batch.size(); j++) scores[batch[j]] = r.pooled[j * static_cast<size_t>(r.cols)];
    }
    return scores;
  });
}

Result<BatchResult> Context::run(const TokenBatch& batch, const BatchOptions& o) {
  int64_t index = -1;
  return guarded<BatchResult>(&index, [&]() -> BatchResult {
    BatchResult res;
    std::vector<SequenceInput> seqs;
    for (const TokenBatch::Seq& s : batch.seqs_) {
      if (!res.index_.emplace(s.id, seqs.size()).second)
        fail(ErrorKind::InvalidArgument, "sequence id " + std::to_string(s.id) + " appears twice in the batch");
      seqs.push_back(SequenceInput{s.ids, s.type_ids, s.special});
    }
    RunOptions ro;
    ro.pooling = o.pooling.value_or(model_->describe().default_pooling);
    ro.normalize = o.normalize;
    ro.dims = o.dims;
    ro.exclude_special = o.exclude_special;
    ro.keep_hidden = o.hidden_states;
    RunOutput r = runner_->run(seqs, ro);
    res.cols_ = r.cols;
    res.d_model_ = model_->describe().d_model;
    res.per_token_ = ro.pooling == Pooling::None;
    res.pooled_ = std::move(r.pooled);
    res.hidden_ = std::move(r.hidden);
    res.token_offsets_.assign(r.cu_seqlens.begin(), r.cu_seqlens.end());
    res.warnings_ = std::move(r.warnings);
    return res;
  });
}

}  // namespace embed

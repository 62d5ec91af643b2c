// The public C++ API of embed. Load a model once (mmap), share it between threads, give each
// thread its own Context. High level: embed(texts) -> row-major float matrix, rerank(query,
// documents) -> scores. Low level (prefill-and-pool): build a batch of token sequences with
// sequence ids, run one forward pass, read pooled vectors or per-token hidden states by id.
// What to compute is one embed::Request (engine/request.h) for all three; how to run it is
// RunSettings. No exception crosses this API: every call returns a Result holding a value or a Status.
// The plain types (Status, Result, ModelOptions, ModelDescription, Embeddings) are engine/types.h.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/model.h"
#include "engine/prompts.h"
#include "engine/readout.h"
#include "engine/request.h"
#include "engine/types.h"

namespace embed {

namespace tok {
class Tokenizer;
}
namespace gguf {
class File;
}
class LoadedModel;
class Runner;

// The file a model argument names, as every front end reads it: a path as it is; "default" (or
// "") the default model: $EMBED_MODEL, else all-MiniLM-L6-v2 f16 in the cache that
// `tools/models.sh default` fills ($EMBED_CACHE, else ~/.cache/embed). Throws Error(Io) naming the
// command that installs the default model when it is missing.
std::string resolve_model_path(const std::string& model);

class Model {
 public:
  // `path` as resolve_model_path reads it.
  static Result<std::shared_ptr<const Model>> load(const std::string& path, const ModelOptions& o = {});
  // A GGUF parsed already, e.g. an HF folder converted in memory (source/model_source.h opens
  // models by name or folder and calls this); describe().path is the file's label.
  static Result<std::shared_ptr<const Model>> load(gguf::File&& file, const ModelOptions& o = {});
  ~Model();
  const ModelDescription& describe() const { return desc_; }
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  // The prompt of a yes/no reranker ({query} and {document} filled in), or "".
  const std::string& rerank_template() const { return rerank_template_; }
  // The GGUF the model runs from (its metadata and tensor directory), mapped or held in memory.
  const gguf::File& gguf_file() const;
  // The sparse / ColBERT heads, or null when the file has neither.
  const ReadoutHeads* readout_heads() const { return readout_ ? readout_->heads : nullptr; }
  const Readout* readout() const { return readout_ ? &*readout_ : nullptr; }

 private:
  friend class Context;
  Model() = default;
  static std::shared_ptr<const Model> from_file(gguf::File file, const ModelOptions& o);
  std::shared_ptr<const LoadedModel> loaded_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  ModelOptions options_;
  ModelDescription desc_;
  std::string rerank_template_;
  std::optional<Readout> readout_;
};


// Per text, the read-outs asked for (the others empty).
struct MultiOutput {
  Embeddings dense;
  std::vector<SparseRow> sparse;
  std::vector<MultiVectorRow> colbert;
};

// Low level: token sequences keyed by caller-chosen sequence ids.
class TokenBatch {
 public:
  // ids of one sequence; type_ids and special mask optional (same length as ids when given).
  void add(int32_t seq_id, std::vector<int32_t> ids, std::vector<int32_t> type_ids = {}, std::vector<uint8_t> special = {});
  size_t size() const { return seqs_.size(); }

 private:
  friend class Context;
  struct Seq {
    int32_t id;
    std::vector<int32_t> ids, type_ids;
    std::vector<uint8_t> special;
  };
  std::vector<Seq> seqs_;
};

class BatchResult {
 public:
  int64_t pooled_dim() const { return cols_; }
  int64_t d_model() const { return d_model_; }
  // Pooled vector (or rank scores) of a sequence; Pooling::None: its first token's row.
  const float* pooled(int32_t seq_id) const;
  const float* hidden(int32_t seq_id) const;  // [n_tokens(seq_id), d_model]; needs hidden_states
  int64_t n_tokens(int32_t seq_id) const;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend class Context;
  size_t slot(int32_t seq_id) const;
  std::map<int32_t, size_t> index_;
  std::vector<int64_t> token_offsets_;
  std::vector<float> pooled_, hidden_;
  int64_t cols_ = 0, d_model_ = 0;
  bool per_token_ = false;
  std::vector<std::string> warnings_;
};

// Per-thread state (its own thread pool or stream and scratch memory). A Context must not be
// used by two threads at once; any number of Contexts may share one Model.
class Context {
 public:
  explicit Context(std::shared_ptr<const Model> model, int threads = 0);
  ~Context();
  Result<Embeddings> embed(const std::vector<std::string>& texts, const Request& r = {}, const RunSettings& s = {});
  // Late chunking with the chunks given per text as character spans (an empty list: the
  // request's chunk_rule for that text); the request must set late_chunking.
  Result<Embeddings> embed(const std::vector<std::string>& texts, const std::vector<std::vector<CharSpan>>& chunk_spans,
                           const Request& r, const RunSettings& s = {});
  // Dense, sparse and ColBERT outputs from the same forward pass (BGE-M3; FlagEmbedding's
  // definitions, engine/readout.h). Texts are tokenized as embed() does; long_inputs, late
  // chunking, KV-Embedding and quantized precisions do not apply. A head the model lacks is an error.
  Result<MultiOutput> encode(const std::vector<std::string>& texts, const Outputs& outputs, const Request& r = {},
                             const RunSettings& s = {});
  // FlagEmbedding's compute_score of documents against a query on a model with both heads (BGE-M3):
  // dense, sparse, colbert and the two weighted hybrids, from one encode of the query and the
  // documents. weights: dense, sparse, colbert. An error's index is the document's (-1: the query).
  Result<std::vector<M3Scores>> score_readouts(const std::string& query, const std::vector<std::string>& documents,
                                               const std::array<double, 3>& weights, const Request& r = {}, const RunSettings& s = {});
  // Token ids instead of texts (OpenAI's token-array input): used as given, no special tokens added.
  Result<Embeddings> embed_ids(std::vector<std::vector<int32_t>> ids, const Request& r = {}, const RunSettings& s = {});
  // Scores per document in input order: P(yes) for yes/no rerankers (Qwen3-Reranker), the raw
  // classifier logit for single-output cross-encoders. Request: max_tokens, truncate (cut the
  // document, the longer text first) and truncation_direction apply.
  Result<std::vector<float>> rerank(const std::string& query, const std::vector<std::string>& documents, const Request& r = {},
                                    const RunSettings& s = {});
  // Each text's last-token state after every block (LayerStates), tokenized as embed() would
  // (prompt or prompt_template, truncation); for layer analysis (`embed kv-layers`). The texts
  // must fit the context (no long_inputs, late chunking or KV-Embedding: the plain model's states).
  Result<LayerStates> layer_states(const std::vector<std::string>& texts, const Request& r = {}, const RunSettings& s = {});
  // One forward pass over the batch (Request: pooling, normalize, dimensions, exclude_special,
  // hidden_states; the length fields do not apply: ids are checked against the context length).
  Result<BatchResult> run(const TokenBatch& batch, const Request& r = {});
  const Model& model() const { return *model_; }
  // The runner under this context, for engine components that batch across requests (the
  // server's scheduler, engine/scheduler.h).
  Runner& runner();

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Runner> runner_;
};

}  // namespace embed

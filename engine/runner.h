// Loading a model (mmap + weights on a backend + architecture) and running one packed batch of
// token sequences through it: the prefill-and-pool core under the public API. Validates every
// input (empty sequences, token ids outside the vocabulary, lengths beyond the context, pooling
// the model cannot do) before anything runs, and refuses non-finite outputs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/pooling.h"
#include "engine/readout.h"
#include "engine/weights.h"
#include "gguf/file.h"

namespace embed {

// A loaded model: read-only after load, shared by every context (thread-safe to share).
class LoadedModel {
 public:
  static std::shared_ptr<LoadedModel> load(const std::string& path, const BackendOptions& backend);
  // A GGUF already parsed (a conversion held in memory, gguf::Writer::to_file).
  static std::shared_ptr<LoadedModel> load(gguf::File file, const BackendOptions& backend);
  ~LoadedModel();
  const gguf::File& file() const { return *file_; }
  const ModelInfo& info() const { return arch_->info(); }
  const Architecture& arch() const { return *arch_; }
  const BackendOptions& backend_options() const { return backend_options_; }
  // The kernels every context of this model runs (its contexts' backends use the same options).
  std::string kernel_level() const { return backend_->kernel_level(); }
  // Token-type rows of the model (BERT segment embeddings); 1 when it has none.
  int64_t n_token_types() const { return n_token_types_; }
  // The sparse / ColBERT / SPLADE heads, loaded with the weights; null when the file has none.
  const ReadoutHeads* readout() const { return readout_ ? &*readout_ : nullptr; }

 private:
  LoadedModel() = default;
  std::unique_ptr<gguf::File> file_;
  BackendOptions backend_options_;
  std::unique_ptr<Backend> backend_;  // owns the weight buffers (device backends)
  std::unique_ptr<WeightLoader> weights_;
  std::unique_ptr<Architecture> arch_;
  std::optional<ReadoutHeads> readout_;
  int64_t n_token_types_ = 1;
};

struct SequenceInput {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;  // empty = all 0
  std::vector<uint8_t> special;   // 1 = special token (for mean pooling without specials); may be empty
};

// What every sequence of one forward pass shares. Row finishing (Matryoshka, normalization) is
// not here: it is per row, done on the host by finish_rows (engine/pipeline.h).
struct PassOptions {
  Pooling pooling = Pooling::Mean;
  bool exclude_special = false;   // mean pooling leaves out tokens marked special
  bool keep_hidden = false;       // also return the final hidden states of every token
  KvRouting kv;                   // KV-Embedding re-routing (off by default)
  bool keep_layer_last = false;   // also return each sequence's last-token state after every block
  // The model's read-out heads on every token's final hidden state (ReadoutHeads::compute):
  // the sparse one (BGE-M3's or SPLADE's) and the ColBERT one.
  bool sparse_readout = false;
  bool colbert_readout = false;
};

struct RunOutput {
  int64_t rows = 0, cols = 0;        // pooled: one row per sequence (per token for Pooling::None)
  std::vector<float> pooled;         // pooled rows as the model computes them, not yet finished
  std::vector<int32_t> cu_seqlens;   // token offsets of each sequence in `hidden`
  std::vector<float> hidden;         // [n_tokens, d_model] if keep_hidden
  std::vector<float> layer_last;     // [n_layers, n_seqs, d_model] if keep_layer_last: the residual
                                     // stream of each sequence's last token after each block
  ReadoutValues readout;             // if sparse_readout / colbert_readout
  std::vector<std::string> warnings;
};

struct HostBatch;  // runner.cpp

// Per-thread execution state: its own backend (thread pool / stream) and workspace.
class Runner {
 public:
  Runner(std::shared_ptr<const LoadedModel> model, int threads);
  RunOutput run(const std::vector<SequenceInput>& seqs, const PassOptions& o);
  // One sequence of a causal model in consecutive pieces of at most `piece` tokens, the keys and
  // values of earlier pieces kept (KvCache): what run({seq}, o) gives (hidden states and last /
  // cls / rank rows bit for bit; mean and hybrid pooling sum in double across pieces, so within
  // the f32 rounding of run()'s sum), in memory bounded by the piece and the cache. Unsupported for
  // bidirectional models and with KV-Embedding (o.kv: re-routing reads the sequence's last token).
  RunOutput run_in_pieces(const SequenceInput& seq, const PassOptions& o, int64_t piece);
  // The model's post-pooling projections (ModelInfo::post_pool) of n pooled rows [n, d_model],
  // for rows pooled outside run(); *cols becomes the output width. Unchanged without projections.
  std::vector<float> project(const std::vector<float>& rows, int64_t n, int64_t* cols);
  const LoadedModel& model() const { return *model_; }
  Backend& backend() { return *backend_; }

 private:
  void validate(const std::vector<SequenceInput>& seqs, const PassOptions& o, RunOutput& out) const;
  void check_finite(const RunOutput& out, const PassOptions& o) const;
  BatchView upload_batch(const HostBatch& h);  // into the workspace
  const float* upload_floats(const std::vector<float>& v);

  std::shared_ptr<const LoadedModel> model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Workspace> ws_;
};

}  // namespace embed

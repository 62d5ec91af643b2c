// What every architecture provides to the engine: its description (ModelInfo), its rank head
// recipe, and a forward pass that turns a packed batch into final hidden states. Architectures
// live in engine/arch/<name>.cpp and are registered in engine/arch/registry.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/workspace.h"

namespace embed {
namespace gguf {
class File;
}

// llama.cpp's llama_pooling_type values (the `{arch}.pooling_type` key).
// Hybrid: the mean of the last token's and the mean-pooled vectors (KV-Embedding's pooling).
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4, Hybrid = 5 };
const char* pooling_name(Pooling p);
bool parse_pooling(const std::string& s, Pooling* out);
// Why cls pooling on a causal model is a mistake: the warning of a run and of `embed serve --pooling cls`.
inline constexpr const char* kCausalClsPoolingWhy =
    "the first token cannot see the rest of the text, so its vector ignores the text (use last or mean pooling)";

// How the rank (classifier) head reads the final hidden states; see engine/pooling.cpp.
struct RankHead {
  PoolKind token = PoolKind::First;          // which row feeds the head
  Activation activation = Activation::Tanh;  // after `cls` (when present)
  bool softmax = false;                      // over the n_cls_out logits (Qwen3-Reranker)
  float norm_eps = 1e-12f;                   // of cls.norm (LayerNorm), when present
};

// y = act(w . x + b) on a pooled vector; no activation = identity, no bias = none.
struct DenseLayer {
  Tensor w, b;
  std::optional<Activation> act;
};

struct ModelInfo {
  std::string arch;
  int64_t n_vocab = 0;
  int64_t d_model = 0;
  int64_t n_layers = 0;
  int64_t n_ctx_train = 0;     // longest input the model was trained for (max tokens per text)
  bool causal = false;         // decoder-style attention (cls pooling cannot see the text)
  Pooling default_pooling = Pooling::None;
  RankHead rank_head;
  // Classifier head (rank pooling); absent tensors are empty.
  Tensor cls, cls_b, cls_norm, cls_norm_b, cls_out, cls_out_b;
  std::vector<std::string> cls_labels;
  // sentence-transformers Dense layers applied in order to pooled vectors (EmbeddingGemma's
  // 2_Dense and 3_Dense); the last one's rows give the output dimension.
  std::vector<DenseLayer> post_pool;
  int64_t n_embd_out() const { return post_pool.empty() ? d_model : post_pool.back().w.rows; }
  int64_t n_cls_out() const { return cls_out.empty() ? (cls.empty() ? 0 : cls.rows) : cls_out.rows; }
};

// A packed batch on the device: tokens of all sequences back to back, no padding.
struct BatchView {
  int64_t n_tokens = 0;
  int n_seqs = 0;
  int max_seqlen = 0;
  const int32_t* ids = nullptr;        // [n_tokens] device
  const int32_t* positions = nullptr;  // [n_tokens] device, 0-based within each sequence (a piece: its positions in the sequence)
  const int32_t* type_ids = nullptr;   // [n_tokens] device (token types / segments)
  const int32_t* cu_seqlens = nullptr; // [n_seqs + 1] device
  const int32_t* cu_seqlens_host = nullptr;
};

class KvCache;

// KV-Embedding (arXiv 2601.01046) for one forward pass: at decoder layers [layer_begin,
// layer_end] the last token's key and value of each sequence become a prefix position that every
// query of the sequence attends to, with `bias` added to its logit. Off when layer_end < layer_begin.
struct KvRouting {
  int layer_begin = 0, layer_end = -1;
  float bias = 1.0f;
  bool on() const { return layer_end >= layer_begin; }
  bool at(int64_t layer) const { return layer >= layer_begin && layer <= layer_end; }
  bool operator==(const KvRouting& o) const {
    return (!on() && !o.on()) || (layer_begin == o.layer_begin && layer_end == o.layer_end && bias == o.bias);
  }
};

// Everything a forward pass may use: the backend, scratch memory, the batch, for a piece of a
// longer sequence (Runner::run_in_pieces) the keys and values of its earlier pieces (then the
// batch is that one sequence and its positions continue from the earlier pieces), and the
// KV-Embedding re-routing (never together with `cache`: see blocks::self_attention).
// Called after each block with the block's output, the residual stream x [n_tokens, d_model] on
// the device (before the final norm), for per-layer analysis (`embed kv-layers`).
using LayerTap = std::function<void(int64_t layer, const Tensor& x)>;

struct ForwardPass {
  Backend& backend;
  Workspace& ws;
  const BatchView& batch;
  KvCache* cache = nullptr;
  KvRouting kv = {};
  const LayerTap* layer_tap = nullptr;
  void after_layer(int64_t layer, const Tensor& x) const {
    if (layer_tap) (*layer_tap)(layer, x);
  }
};

class Architecture {
 public:
  virtual ~Architecture() = default;
  const ModelInfo& info() const { return info_; }
  // Writes the final hidden states [n_tokens, d_model] (after the final norm, if any) to `out`.
  virtual void forward(ForwardPass& fp, Tensor out) const = 0;

 protected:
  ModelInfo info_;
};

class WeightLoader;
using ArchFactory = std::unique_ptr<Architecture> (*)(const gguf::File& f, WeightLoader& w);

// engine/arch/registry.cpp
std::unique_ptr<Architecture> create_architecture(const gguf::File& f, WeightLoader& w);
std::vector<std::string> supported_architectures();

}  // namespace embed

// `gemma3`: Gemma 3 text decoders (e.g. gemma-3-270m) used for embeddings the way llama.cpp runs
// them: causal attention. Sandwich RMSNorms (pre and post norm around attention and MLP), q/k
// per-head RMSNorm before NEOX RoPE, GeGLU MLP (tanh GELU), token embeddings scaled by
// sqrt(d_model), Q scaled by 1/sqrt(d_head), and 5 sliding-window layers (key visible iff
// i - j < n_swa, RoPE base 10000) for every global layer. GGUF norm weights already hold
// Gemma's (1 + w). (llama.cpp src/models/gemma3.cpp, HF modeling_gemma3.py.)
#include "engine/arch/gemma_family.h"

namespace embed::arch {
namespace {

class Gemma3 final : public Architecture {
 public:
  Gemma3(const gguf::File& f, WeightLoader& w) {
    dims_ = read_gemma_dims(f, "gemma3", info_);
    info_.causal = true;
    info_.default_pooling = read_pooling(HParams(f, "gemma3"), Pooling::Mean);
    info_.rank_head = RankHead{PoolKind::Last, Activation::Tanh, false};
    weights_ = load_gemma_weights(w, dims_);
    load_rank_head(w, info_);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    // Standard (one-sided) window: query i sees keys j with i - n_swa < j <= i.
    gemma_forward(fp, weights_, dims_, /*causal=*/true, /*window_left=*/dims_.n_swa - 1, /*window_right=*/-1, x);
  }

 private:
  GemmaDims dims_;
  GemmaWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_gemma3(const gguf::File& f, WeightLoader& w) { return std::make_unique<Gemma3>(f, w); }

}  // namespace embed::arch

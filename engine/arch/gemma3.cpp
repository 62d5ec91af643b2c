// `gemma3`: Gemma 3 text decoders (e.g. gemma-3-270m) used for embeddings the way llama.cpp runs
// them: causal attention. Sandwich RMSNorms (pre and post norm around attention and MLP), q/k
// per-head RMSNorm before NEOX RoPE, GeGLU MLP (tanh GELU), token embeddings scaled by
// sqrt(d_model), Q scaled by 1/sqrt(d_head), and 5 sliding-window layers (key visible iff
// i - j < n_swa, RoPE base 10000) for every global layer. GGUF norm weights already hold
// Gemma's (1 + w). (llama.cpp src/models/gemma3.cpp, HF modeling_gemma3.py.)
#include "engine/arch/gemma_family.h"

namespace embed::arch {

const ArchSpec& gemma3_spec();  // the description, at the end of this file
namespace {

class Gemma3 final : public Architecture {
 public:
  Gemma3(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, gemma3_spec());
    t_ = load_tensors(w, gemma3_spec(), p_);
    dims_ = gemma_dims(f, "gemma3", p_);
    fill_model_info(info_, gemma3_spec(), p_, t_, w, Pooling::Mean);
    info_.causal = true;
    info_.rank_head = RankHead{PoolKind::Last, Activation::Tanh, false};
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    // Standard (one-sided) window: query i sees keys j with i - n_swa < j <= i.
    gemma_forward(fp, t_, p_, dims_, /*causal=*/true, /*window_left=*/static_cast<int>(p_.n_swa) - 1, /*window_right=*/-1, x);
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  GemmaDims dims_;
};

}  // namespace

const ArchSpec& gemma3_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = gemma_spec("gemma3", {"Gemma3ForCausalLM"});
    append(s.weights, rank_head_weights("", ""));
    s.hf_checks.push_back({"use_bidirectional_attention", "false"});
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<Gemma3>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

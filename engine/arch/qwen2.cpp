// `qwen2`: Qwen2 decoders (e.g. gte-Qwen2 style embedders): pre-RMSNorm, q/k/v projections with
// biases, NEOX RoPE, grouped-query causal attention, SwiGLU (HF modeling_qwen2.py).
#include "engine/arch/llama_family.h"

namespace embed::arch {

const ArchSpec& qwen2_spec();  // the description, at the end of this file

const ArchSpec& qwen2_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = decoder_spec("qwen2", {"Qwen2Model", "Qwen2ForCausalLM"}, /*qkv_bias=*/true, Fold::None, Fold::None);
    s.create = [](const gguf::File& f, WeightLoader& w) {
      return create_decoder(f, w, qwen2_spec(), DecoderRecipe{RopeMode::Neox, RankHead{PoolKind::Last, Activation::Tanh, false}});
    };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

// `qwen2`: Qwen2 decoders (e.g. gte-Qwen2 style embedders): pre-RMSNorm, q/k/v projections with
// biases, NEOX RoPE, grouped-query causal attention, SwiGLU (HF modeling_qwen2.py). gte-Qwen2 was
// trained with bidirectional attention and says so in config.json (`is_causal: false`): the
// converter writes it as qwen2.attention.causal = false (llama.cpp's key), which turns the causal
// mask off; without the key a file runs causal.
#include "engine/arch/llama_family.h"

namespace embed::arch {

const ArchSpec& qwen2_spec();  // the description, at the end of this file

const ArchSpec& qwen2_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = decoder_spec("qwen2", {"Qwen2Model", "Qwen2ForCausalLM"}, /*qkv_bias=*/true, Fold::None, Fold::None);
    for (HParamSpec& row : s.hparams)
      if (std::string(row.key) == "attention.causal") row.hf = "is_causal", row.write = Write::IfNotDefault;
    std::erase_if(s.hf_checks, [](const HfCheck& c) { return std::string(c.key) == "is_causal"; });
    s.create = [](const gguf::File& f, WeightLoader& w) {
      return create_decoder(f, w, qwen2_spec(), DecoderRecipe{RopeMode::Neox, RankHead{PoolKind::Last, Activation::Tanh, false}});
    };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

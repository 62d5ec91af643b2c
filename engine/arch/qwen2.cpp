// `qwen2`: Qwen2 decoders (e.g. gte-Qwen2 style embedders): pre-RMSNorm, q/k/v projections with
// biases, NEOX RoPE, grouped-query causal attention, SwiGLU (HF modeling_qwen2.py).
#include "engine/arch/llama_family.h"

namespace embed::arch {

std::unique_ptr<Architecture> create_qwen2(const gguf::File& f, WeightLoader& w) {
  return create_decoder(f, w,
                        DecoderRecipe{"qwen2", RopeMode::Neox, /*qkv_biases=*/true, /*qk_norm=*/false,
                                      RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/false}});
}

}  // namespace embed::arch

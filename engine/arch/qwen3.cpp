// `qwen3`: Qwen3 decoders, as used by Qwen3-Embedding (last-token pooling at the appended
// <|endoftext|>) and Qwen3-Reranker (rank head: last token, cls.output = the lm_head rows of
// "yes"/"no", softmax, score = P(yes)). Differs from qwen2 by a per-head RMSNorm on q and k
// before RoPE (HF modeling_qwen3.py Qwen3Attention: q_norm/k_norm) and no q/k/v biases.
#include "engine/arch/llama_family.h"

namespace embed::arch {

std::unique_ptr<Architecture> create_qwen3(const gguf::File& f, WeightLoader& w) {
  return create_decoder(f, w,
                        DecoderRecipe{"qwen3", RopeMode::Neox, /*qkv_biases=*/false, /*qk_norm=*/true,
                                      RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/true}});
}

}  // namespace embed::arch

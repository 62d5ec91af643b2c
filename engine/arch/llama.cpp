// `llama`: Llama decoders. NORM RoPE (adjacent pairs): llama.cpp's converter permutes the q/k
// weights so HF's rotate-half becomes the pairwise form. q/k/v biases optional.
#include "engine/arch/llama_family.h"

namespace embed::arch {

std::unique_ptr<Architecture> create_llama(const gguf::File& f, WeightLoader& w) {
  if (w.has("rope_freqs.weight"))
    fail(ErrorKind::Unsupported, f.path() + ": llama rope_freqs (Llama 3.1 long-context RoPE scaling) is not supported");
  return create_decoder(f, w,
                        DecoderRecipe{"llama", RopeMode::Norm, /*qkv_biases=*/false, /*qk_norm=*/false,
                                      RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/false}});
}

}  // namespace embed::arch

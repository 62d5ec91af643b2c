// `llama`: Llama decoders. NORM RoPE (adjacent pairs): the converter permutes the q/k rows so
// HF's rotate-half becomes the pairwise form (as llama.cpp's LlamaModel.permute). q/k/v biases optional.
#include "engine/arch/llama_family.h"

namespace embed::arch {

const ArchSpec& llama_spec();  // the description, at the end of this file

const ArchSpec& llama_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = decoder_spec("llama", {"LlamaModel", "LlamaForCausalLM"}, /*qkv_bias=*/false, Fold::RopeNormQ, Fold::RopeNormK);
    // llama.cpp's converter writes both for llama (LlamaModel.set_gguf_parameters).
    key_row(s.hparams, "rope.dimension_count").hf = "@d_head";
    key_row(s.hparams, "rope.dimension_count").write = Write::Always;
    append(s.hparams, {{.key = "vocab_size", .field = &ArchParams::vocab_size, .lo = 1, .hi = kMaxVocab, .required = false,
                        .fallback = 0, .hf = "vocab_size"}});
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> {
      if (w.has("rope_freqs.weight"))
        fail(ErrorKind::Unsupported, f.path() + ": llama rope_freqs (Llama 3.1 long-context RoPE scaling) is not supported");
      return create_decoder(f, w, llama_spec(), DecoderRecipe{RopeMode::Norm, RankHead{PoolKind::Last, Activation::Tanh, false}});
    };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

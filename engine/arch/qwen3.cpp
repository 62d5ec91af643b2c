// `qwen3`: Qwen3 decoders, as used by Qwen3-Embedding (last-token pooling at the appended
// <|endoftext|>) and Qwen3-Reranker (rank head: last token, cls.output = the lm_head rows of
// "yes"/"no", softmax, score = P(yes)). Differs from qwen2 by a per-head RMSNorm on q and k
// before RoPE (HF modeling_qwen3.py Qwen3Attention: q_norm/k_norm) and no q/k/v biases.
#include "engine/arch/llama_family.h"

namespace embed::arch {

const ArchSpec& qwen3_spec();  // the description, at the end of this file
namespace {

// llama.cpp's converter hard-codes this prompt for Qwen3-Reranker (Qwen3Model.set_gguf_parameters);
// callers substitute {query} and {document}.
constexpr const char* kRerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

}  // namespace

const ArchSpec& qwen3_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = decoder_spec("qwen3", {"Qwen3Model", "Qwen3ForCausalLM"}, /*qkv_bias=*/false, Fold::None, Fold::None);
    const std::string b = "layers.{L}.self_attn.";
    append(s.weights, {
        vector("blk.{L}.attn_q_norm.weight", Dim::DHead, &LayerTensors::q_norm, b + "q_norm.weight"),
        vector("blk.{L}.attn_k_norm.weight", Dim::DHead, &LayerTensors::k_norm, b + "k_norm.weight"),
    });
    // Qwen3-Reranker, detected as llama.cpp's converter does: cls.output = lm_head rows of "yes", "no".
    s.token_head = TokenHead{.tokens = {"yes", "no"}, .hint = "qwen3-reranker", .template_name = "rerank",
                             .chat_template = kRerankTemplate};
    s.create = [](const gguf::File& f, WeightLoader& w) {
      return create_decoder(f, w, qwen3_spec(), DecoderRecipe{RopeMode::Neox, RankHead{PoolKind::Last, Activation::Tanh, true}});
    };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

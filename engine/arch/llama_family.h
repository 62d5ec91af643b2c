// The pre-norm decoder shared by llama, qwen2 and qwen3: RMSNorm before attention and MLP,
// RoPE, grouped-query causal attention, SwiGLU MLP, final RMSNorm. The architecture files add
// their own entries to the shared description and choose the RoPE mode; this header only holds
// what they share. (HF: modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py LlamaDecoderLayer & co.)
#pragma once

#include "engine/arch/arch_common.h"

namespace embed::arch {

// The family's description: decoder_keys() and the weight table with HF (Llama/Qwen) names.
// `qkv_bias`: attn_q/k/v biases must exist (qwen2) rather than may; `q_fold` / `k_fold`: what
// the converter does to q / k rows (llama: reorder for NORM RoPE).
ArchSpec decoder_spec(std::string name, std::vector<std::string> hf_classes, bool qkv_bias, Fold q_fold, Fold k_fold);

// What distinguishes one member of the family from another at run time.
struct DecoderRecipe {
  RopeMode rope;        // NEOX (qwen) or NORM (llama: q/k permuted by the converter)
  RankHead rank_head;   // how a classifier head reads the hidden states
};
std::unique_ptr<Architecture> create_decoder(const gguf::File& f, WeightLoader& w, const ArchSpec& spec, const DecoderRecipe& r);

}  // namespace embed::arch

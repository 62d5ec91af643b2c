// The pre-norm decoder shared by llama, qwen2 and qwen3: RMSNorm before attention and MLP,
// RoPE, grouped-query causal attention, SwiGLU MLP, final RMSNorm. The architecture files read
// their own hyperparameters and choose the RoPE mode and which optional tensors must exist;
// this header only holds what they share. (HF: modeling_llama.py / modeling_qwen2.py /
// modeling_qwen3.py LlamaDecoderLayer & co.)
#pragma once

#include "engine/arch/arch_common.h"

namespace embed::arch {

struct DecoderDims {
  int64_t d_model = 0, d_ff = 0, n_layers = 0;
  int n_heads = 0, n_kv_heads = 0, d_head = 0;
  float rms_eps = 1e-6f;
  ops::RopeSpec rope;
};

struct DecoderLayer {
  Tensor attn_norm, o, ffn_norm, gate, up, down;
  blocks::AttentionWeights attn;
};

struct DecoderWeights {
  Tensor tok_embd, output_norm;
  std::vector<DecoderLayer> layers;
};

// Reads the llama-style hyperparameters of `arch` (head counts, key_length, eps, rope base and
// linear scaling; yarn/longrope are refused) and fills `info` (d_model, layers, context, vocab).
DecoderDims read_decoder_dims(const gguf::File& f, const std::string& arch, RopeMode mode, ModelInfo& info);

// token_embd, output_norm and every block; `qkv_biases` requires attn_q/k/v biases (qwen2),
// `qk_norm` requires attn_q_norm/attn_k_norm (qwen3).
DecoderWeights load_decoder_weights(WeightLoader& w, const DecoderDims& d, bool qkv_biases, bool qk_norm);

// x = token_embd[ids]; per block: x += Wo . attn(rms(x)); x += down(silu(gate(rms(x))) * up(rms(x)));
// x = rms(x, output_norm). Causal attention within each sequence.
void decoder_forward(ForwardPass& fp, const DecoderWeights& w, const DecoderDims& d, Tensor x);

// What distinguishes one member of the family from another: the architecture files fill this in.
struct DecoderRecipe {
  const char* arch;           // general.architecture
  RopeMode rope;              // NEOX (qwen) or NORM (llama: q/k permuted by the converter)
  bool qkv_biases;            // attn_q/k/v biases must exist (qwen2)
  bool qk_norm;               // per-head RMSNorm of q and k before RoPE (qwen3)
  RankHead rank_head;         // how a classifier head reads the hidden states
};
std::unique_ptr<Architecture> create_decoder(const gguf::File& f, WeightLoader& w, const DecoderRecipe& r);

}  // namespace embed::arch

// The Gemma 3 block shared by gemma3 (causal) and gemma-embedding (bidirectional): what the two
// architecture files have in common. They differ in attention direction and window shape.
#pragma once

#include "engine/arch/arch_common.h"

namespace embed::arch {

struct GemmaDims {
  int64_t d_model = 0, d_ff = 0, n_layers = 0;
  int n_heads = 0, n_kv_heads = 0, d_head = 0;
  float rms_eps = 1e-6f;
  float attn_scale = 1.0f;       // applied to q.k (1/sqrt(d_head))
  int n_swa = 0;                 // sliding window size (0: none)
  std::vector<bool> is_local;    // per layer: sliding-window layer
  ops::RopeSpec rope_global, rope_local;
};

struct GemmaLayer {
  Tensor attn_norm, o, post_attn_norm, ffn_norm, gate, up, down, post_ffn_norm;
  blocks::AttentionWeights attn;
};

struct GemmaWeights {
  Tensor tok_embd, output_norm;
  std::vector<GemmaLayer> layers;
};

GemmaDims read_gemma_dims(const gguf::File& f, const std::string& arch, ModelInfo& info);
GemmaWeights load_gemma_weights(WeightLoader& w, const GemmaDims& d);
// Full forward to the final-norm hidden states; local layers use the given window.
void gemma_forward(ForwardPass& fp, const GemmaWeights& w, const GemmaDims& d, bool causal, int window_left,
                   int window_right, Tensor x);

}  // namespace embed::arch

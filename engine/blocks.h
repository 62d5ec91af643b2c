// Transformer pieces shared by architectures, built only from ops front-doors. A block never
// branches on the architecture: what differs between models is passed in (weights that may be
// empty, a rope spec or none, the activation).
#pragma once

#include "engine/ops.h"

namespace embed::blocks {

struct AttentionWeights {
  Tensor q, q_b, k, k_b, v, v_b;  // projections [n_heads*d_head | n_kv_heads*d_head, d_model] and biases (may be empty)
  Tensor q_norm, k_norm;          // per-head RMSNorm weights [d_head] (Qwen3, Gemma); empty when absent
};

// Projects h [n_tokens, d_model] to q, k, v; applies the per-head q/k norm when present, then
// RoPE when `rope` is given, then attention (spec.reroute_last_kv: with each sequence's last key
// and value as a prefix position, KV-Embedding). Returns the attention output [n_tokens,
// n_heads*d_head] (before the output projection) in workspace memory.
Tensor self_attention(ForwardPass& fp, const Tensor& h, const AttentionWeights& w, const ops::AttentionSpec& spec,
                      const ops::RopeSpec* rope, float qk_norm_eps);

// out (+)= down(act(up(h) + up_b)) + down_b   (BERT-style MLP)
void mlp(ForwardPass& fp, const Tensor& h, const Tensor& up, const Tensor& up_b, const Tensor& down, const Tensor& down_b,
         Activation act, Tensor out, bool accumulate);

// out (+)= down(act(gate(h)) * up(h))   (SwiGLU with Silu, GeGLU with Gelu*)
void mlp_glu(ForwardPass& fp, const Tensor& h, const Tensor& gate, const Tensor& up, const Tensor& down, Activation act,
             Tensor out, bool accumulate);

}  // namespace embed::blocks

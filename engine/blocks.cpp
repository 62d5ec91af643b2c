// Shared transformer blocks.
#include "engine/blocks.h"

namespace embed::blocks {

Tensor self_attention(ForwardPass& fp, const Tensor& h, const AttentionWeights& w, const ops::AttentionSpec& spec,
                      const ops::RopeSpec* rope, float qk_norm_eps) {
  const int64_t n = h.rows;
  Tensor q = fp.ws.f32(n, w.q.rows), k = fp.ws.f32(n, w.k.rows), v = fp.ws.f32(n, w.v.rows);
  ops::linear(fp, h, w.q, w.q_b, q);
  ops::linear(fp, h, w.k, w.k_b, k);
  ops::linear(fp, h, w.v, w.v_b, v);
  if (!w.q_norm.empty()) ops::rms_norm_heads(fp, q, w.q_norm, spec.d_head, qk_norm_eps);
  if (!w.k_norm.empty()) ops::rms_norm_heads(fp, k, w.k_norm, spec.d_head, qk_norm_eps);
  if (rope) {
    ops::rope(fp, q, spec.n_heads, spec.d_head, *rope);
    ops::rope(fp, k, spec.n_kv_heads, spec.d_head, *rope);
  }
  Tensor out = fp.ws.f32(n, q.cols);
  if (!spec.reroute_last_kv) {
    ops::attention(fp, q, k, v, out, spec);
    return out;
  }
  // KV-Embedding: the last token's key (rotated at its own position, as the layer computed it)
  // and value, one per sequence, as the prefix position.
  ops::AttentionSpec s = spec;
  s.prefix_k = ops::pool_rows(fp, k, PoolKind::Last);
  s.prefix_v = ops::pool_rows(fp, v, PoolKind::Last);
  ops::attention(fp, q, k, v, out, s);
  return out;
}

void mlp(ForwardPass& fp, const Tensor& h, const Tensor& up, const Tensor& up_b, const Tensor& down, const Tensor& down_b,
         Activation act, Tensor out, bool accumulate) {
  Tensor u = fp.ws.f32(h.rows, up.rows);
  ops::linear_activation(fp, h, up, up_b, u, act);
  ops::linear(fp, u, down, down_b, out, accumulate);
}

void mlp_glu(ForwardPass& fp, const Tensor& h, const Tensor& gate, const Tensor& up, const Tensor& down, Activation act,
             Tensor out, bool accumulate) {
  Tensor g = fp.ws.f32(h.rows, gate.rows), u = fp.ws.f32(h.rows, up.rows);
  ops::linear(fp, h, gate, Tensor{}, g);
  ops::linear(fp, h, up, Tensor{}, u);
  ops::glu(fp, g, u, g, act);
  ops::linear(fp, g, down, Tensor{}, out, accumulate);
}

}  // namespace embed::blocks

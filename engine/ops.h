// Op front-doors: the only way model code reaches a Backend. Each checks ranks, dtypes, shapes
// and aliasing once (EMBED_CHECK: a violation is a programming error, never bad user input,
// because weights and hyperparameters were validated at load), fills the args struct and calls
// the backend.
#pragma once

#include "engine/backend.h"
#include "engine/model.h"

namespace embed::ops {

// out (+)= scale * table[ids]
void gather(ForwardPass& fp, const Tensor& table, const int32_t* ids, Tensor out, float scale = 1.0f, bool accumulate = false);
// y (+)= x . w^T + bias (bias may be empty)
void linear(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor y, bool accumulate = false);
// y = act(x . w^T + bias): the activation fused into the matmul where the backend can.
void linear_activation(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor y,
                       std::optional<Activation> act, bool accumulate = false);
void layer_norm(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& b, Tensor y, float eps);
void rms_norm(ForwardPass& fp, const Tensor& x, const Tensor& w, Tensor y, float eps);
// Per-head RMSNorm of x [n_tokens, n_heads * d_head] with a [d_head] weight (Qwen3/Gemma q/k norm).
void rms_norm_heads(ForwardPass& fp, Tensor x, const Tensor& w, int d_head, float eps);

struct RopeSpec {
  RopeMode mode = RopeMode::Neox;
  int n_rot = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
};
void rope(ForwardPass& fp, Tensor x, int n_heads, int d_head, const RopeSpec& spec);

struct AttentionSpec {
  int n_heads = 0, n_kv_heads = 0, d_head = 0;
  float scale = 1.0f;
  bool causal = false;
  int window_left = -1, window_right = -1;
  // KV-Embedding prefix (AttentionArgs::prefix_k): [n_seqs, n_kv_heads * d_head] each, or empty.
  // (Every member has a default, so a spec written {n_heads, n_kv_heads, d_head, scale, causal} is whole.)
  Tensor prefix_k{}, prefix_v{};
  float prefix_bias = 0.0f;
  // blocks::self_attention: take the prefix from the last token's key and value of each sequence
  // (KV-Embedding's re-routing at this layer; ForwardPass::kv).
  bool reroute_last_kv = false;
  // Position bias (AttentionArgs::bias_table): a [n_buckets, n_heads] F32 table of relative
  // buckets and/or ALiBi slopes.
  Tensor bias_table{};
  RelativeBuckets bias_buckets{};
  float alibi_max_bias = 0.0f;
};
// k, v: the keys of q's tokens, or with kv_rows keys that start at earlier positions (a KV cache).
void attention(ForwardPass& fp, const Tensor& q, const Tensor& k, const Tensor& v, Tensor out, const AttentionSpec& spec,
               const AttentionKvRows* kv_rows = nullptr);

// [n_tokens, d] -> [n_seqs, d] in workspace memory: each sequence's mean (token_weights: see
// PoolArgs), first or last row.
Tensor pool_rows(ForwardPass& fp, const Tensor& x, PoolKind kind, const float* token_weights = nullptr);

void activation(ForwardPass& fp, const Tensor& x, Tensor y, Activation act);
void glu(ForwardPass& fp, const Tensor& gate, const Tensor& up, Tensor y, Activation act);
void add(ForwardPass& fp, const Tensor& a, const Tensor& b, Tensor y);
void scale(ForwardPass& fp, const Tensor& x, Tensor y, float factor);

}  // namespace embed::ops

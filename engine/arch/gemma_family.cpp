// Gemma 3 block: hyperparameters, weights and forward shared by gemma3 and gemma-embedding.
#include "engine/arch/gemma_family.h"

namespace embed::arch {

GemmaDims read_gemma_dims(const gguf::File& f, const std::string& arch, ModelInfo& info) {
  HParams hp(f, arch);
  GemmaDims d;
  d.d_model = hp.count("embedding_length", 1, kMaxModelDim);
  d.n_layers = hp.count("block_count", 1, kMaxLayers);
  d.d_ff = hp.count("feed_forward_length", 1, 16 * kMaxModelDim);
  d.n_heads = static_cast<int>(hp.count("attention.head_count", 1, kMaxHeads));
  d.n_kv_heads = static_cast<int>(hp.count_or("attention.head_count_kv", d.n_heads, 1, kMaxHeads));
  if (d.n_heads % d.n_kv_heads)
    fail(ErrorKind::Format, f.path() + ": " + arch + ".attention.head_count is not a multiple of head_count_kv");
  d.d_head = static_cast<int>(hp.count_or("attention.key_length", d.d_model / d.n_heads, 1, 4096));
  d.rms_eps = hp.real_or("attention.layer_norm_rms_epsilon", 1e-6f);
  // Gemma 3 27B scales by 1/sqrt(d_model / n_heads); every other size by 1/sqrt(d_head).
  const bool is_27b = d.n_layers == 62;
  d.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? d.d_model / d.n_heads : d.d_head));
  d.n_swa = static_cast<int>(hp.count_or("attention.sliding_window", 0, 0, kMaxContext));
  const int64_t pattern = hp.count_or("attention.sliding_window_pattern", 6, 0, kMaxLayers);
  for (int64_t l = 0; l < d.n_layers; l++) d.is_local.push_back(d.n_swa > 0 && (pattern == 0 || l % pattern < pattern - 1));
  d.rope_global.mode = d.rope_local.mode = RopeMode::Neox;
  d.rope_global.n_rot = d.rope_local.n_rot = static_cast<int>(hp.count_or("rope.dimension_count", d.d_head, 2, d.d_head));
  d.rope_global.freq_base = hp.real_or("rope.freq_base", 10000.0f);
  d.rope_local.freq_base = hp.real_or("rope.freq_base_swa", 10000.0f);
  d.rope_global.freq_scale = rope_freq_scale(f, hp, arch);

  info.arch = arch;
  info.d_model = d.d_model;
  info.n_layers = d.n_layers;
  info.n_ctx_train = hp.count("context_length", 1, kMaxContext);
  info.n_vocab = vocab_rows(f, "token_embd.weight", d.d_model);
  return d;
}

GemmaWeights load_gemma_weights(WeightLoader& w, const GemmaDims& d) {
  GemmaWeights gw;
  const int64_t E = d.d_model, Q = int64_t{d.n_heads} * d.d_head, KV = int64_t{d.n_kv_heads} * d.d_head;
  gw.tok_embd = w.table("token_embd.weight", vocab_rows(w.file(), "token_embd.weight", E), E);
  gw.output_norm = w.vector("output_norm.weight", E);
  for (int64_t l = 0; l < d.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    GemmaLayer L;
    L.attn_norm = w.vector(p + "attn_norm.weight", E);
    L.attn = load_qkv(w, p, Q, KV, E, /*biases=*/false);
    L.attn.q_norm = w.vector(p + "attn_q_norm.weight", d.d_head);
    L.attn.k_norm = w.vector(p + "attn_k_norm.weight", d.d_head);
    L.o = w.matrix(p + "attn_output.weight", E, Q);
    L.post_attn_norm = w.vector(p + "post_attention_norm.weight", E);
    L.ffn_norm = w.vector(p + "ffn_norm.weight", E);
    L.gate = w.matrix(p + "ffn_gate.weight", d.d_ff, E);
    L.up = w.matrix(p + "ffn_up.weight", d.d_ff, E);
    L.down = w.matrix(p + "ffn_down.weight", E, d.d_ff);
    L.post_ffn_norm = w.vector(p + "post_ffw_norm.weight", E);
    gw.layers.push_back(L);
  }
  return gw;
}

void gemma_forward(ForwardPass& fp, const GemmaWeights& w, const GemmaDims& d, bool causal, int window_left,
                   int window_right, Tensor x) {
  ops::gather(fp, w.tok_embd, fp.batch.ids, x, std::sqrt(static_cast<float>(d.d_model)));
  for (size_t l = 0; l < w.layers.size(); l++) {
    const GemmaLayer& L = w.layers[l];
    Workspace::Scope scope(fp.ws);
    const bool local = d.is_local[l];
    ops::AttentionSpec spec{d.n_heads, d.n_kv_heads, d.d_head, d.attn_scale, causal};
    if (local) {
      spec.window_left = window_left;
      spec.window_right = window_right;
    }
    Tensor h = fp.ws.f32(x.rows, x.cols);
    ops::rms_norm(fp, x, L.attn_norm, h, d.rms_eps);
    const Tensor a = blocks::self_attention(fp, h, L.attn, spec, local ? &d.rope_local : &d.rope_global, d.rms_eps);
    ops::linear(fp, a, L.o, Tensor{}, h);
    ops::rms_norm(fp, h, L.post_attn_norm, h, d.rms_eps);
    ops::add(fp, x, h, x);
    ops::rms_norm(fp, x, L.ffn_norm, h, d.rms_eps);
    Tensor f = fp.ws.f32(x.rows, x.cols);
    blocks::mlp_glu(fp, h, L.gate, L.up, L.down, Activation::GeluTanh, f, /*accumulate=*/false);
    ops::rms_norm(fp, f, L.post_ffn_norm, f, d.rms_eps);
    ops::add(fp, x, f, x);
  }
  ops::rms_norm(fp, x, w.output_norm, x, d.rms_eps);
}

}  // namespace embed::arch

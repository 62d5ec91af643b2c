// Gemma 3 block: description, derived dimensions and forward shared by gemma3 and gemma-embedding.
#include "engine/arch/gemma_family.h"

namespace embed::arch {

ArchSpec gemma_spec(std::string name, std::vector<std::string> hf_classes) {
  ArchSpec s;
  s.name = std::move(name);
  s.hf_classes = std::move(hf_classes);
  s.hparams = decoder_keys();
  const Write opt = Write::IfInConfig;
  append(s.hparams, {
      {.key = "rope.freq_base_swa", .field = &ArchParams::rope_base_swa, .required = false, .fallback = 10000.0,
       .hf = "@rope_theta_swa", .write = opt},
      {.key = "attention.sliding_window", .field = &ArchParams::n_swa, .lo = 0, .hi = kMaxContext, .required = false,
       .fallback = 0, .hf = "sliding_window"},
      // Layer l is local iff l % pattern < pattern - 1 (0: every layer); from HF layer_types.
      {.key = "attention.sliding_window_pattern", .field = &ArchParams::swa_pattern, .lo = 0, .hi = kMaxLayers, .required = false,
       .fallback = 6, .hf = "@layer_pattern", .write = Write::IfNotDefault},
      {.key = "final_logit_softcapping", .field = &ArchParams::final_softcap, .required = false, .fallback = 0,
       .hf = "final_logit_softcapping", .write = opt},
  });
  // llama.cpp's Gemma3Model.set_gguf_parameters writes these when config.json lacks them.
  s.hf_defaults = {{"context_length", 131072}, {"attention.head_count", 8}, {"attention.head_count_kv", 4},
                   {"attention.key_length", 256}, {"attention.value_length", 256},
                   {"attention.layer_norm_rms_epsilon", 1e-6}, {"rope.freq_base", 1e6}};
  using L = LayerTensors;
  using M = ModelTensors;
  const std::string b = "layers.{L}.";
  // HF Gemma3RMSNorm computes x * (1 + w): every norm weight is stored as 1 + w.
  auto norm = [](WeightSpec w) { return w.folded(Fold::AddOne); };
  s.weights = {
      table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, "embed_tokens.weight").folded(Fold::VocabRows),
      norm(vector("output_norm.weight", Dim::DModel, &M::output_norm, "norm.weight")),
      norm(vector("blk.{L}.attn_norm.weight", Dim::DModel, &L::attn_norm, b + "input_layernorm.weight")),
      matrix("blk.{L}.attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "self_attn.q_proj.weight"),
      vector("blk.{L}.attn_q.bias", Dim::QRows, &L::q_b, b + "self_attn.q_proj.bias").optional(),
      matrix("blk.{L}.attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "self_attn.k_proj.weight"),
      vector("blk.{L}.attn_k.bias", Dim::KVRows, &L::k_b, b + "self_attn.k_proj.bias").optional(),
      matrix("blk.{L}.attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "self_attn.v_proj.weight"),
      vector("blk.{L}.attn_v.bias", Dim::KVRows, &L::v_b, b + "self_attn.v_proj.bias").optional(),
      norm(vector("blk.{L}.attn_q_norm.weight", Dim::DHead, &L::q_norm, b + "self_attn.q_norm.weight")),
      norm(vector("blk.{L}.attn_k_norm.weight", Dim::DHead, &L::k_norm, b + "self_attn.k_norm.weight")),
      matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "self_attn.o_proj.weight"),
      norm(vector("blk.{L}.post_attention_norm.weight", Dim::DModel, &L::post_attention_norm, b + "post_attention_layernorm.weight")),
      norm(vector("blk.{L}.ffn_norm.weight", Dim::DModel, &L::ffn_norm, b + "pre_feedforward_layernorm.weight")),
      matrix("blk.{L}.ffn_gate.weight", Dim::DFF, Dim::DModel, &L::ffn_gate, b + "mlp.gate_proj.weight"),
      matrix("blk.{L}.ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "mlp.up_proj.weight"),
      matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.down_proj.weight"),
      norm(vector("blk.{L}.post_ffw_norm.weight", Dim::DModel, &L::post_ffw_norm, b + "post_feedforward_layernorm.weight")),
  };
  s.hf_prefixes = {"model."};
  s.hf_skip = {"lm_head.weight"};  // tied to embed_tokens; llama.cpp's converter skips it too
  // The forward hard-codes tanh-GELU, no attention soft-capping and a 1/sqrt(d_head) query scale.
  s.hf_checks = {{"hidden_activation", "\"gelu_pytorch_tanh\""}, {"attn_logit_softcapping", "null"},
                 {"query_pre_attn_scalar", "@d_head"}};
  return s;
}

GemmaDims gemma_dims(const gguf::File& f, const std::string& arch, const ArchParams& p) {
  GemmaDims d;
  // Gemma 3 27B scales by 1/sqrt(d_model / n_heads); every other size by 1/sqrt(d_head).
  const bool is_27b = p.n_layers == 62;
  d.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? p.d_model / p.n_heads : p.d_head));
  const int64_t pattern = p.swa_pattern;
  for (int64_t l = 0; l < p.n_layers; l++) d.is_local.push_back(p.n_swa > 0 && (pattern == 0 || l % pattern < pattern - 1));
  d.rope_global.mode = d.rope_local.mode = RopeMode::Neox;
  d.rope_global.n_rot = d.rope_local.n_rot = static_cast<int>(p.n_rot);
  d.rope_global.freq_base = p.rope_base;
  d.rope_local.freq_base = p.rope_base_swa;
  d.rope_global.freq_scale = rope_freq_scale(p, f, arch);
  return d;
}

void gemma_forward(ForwardPass& fp, const ModelTensors& t, const ArchParams& p, const GemmaDims& d, bool causal,
                   int window_left, int window_right, Tensor x) {
  const float eps = p.norm_eps;
  ops::gather(fp, t.token_embd, fp.batch.ids, x, std::sqrt(static_cast<float>(p.d_model)));
  for (size_t l = 0; l < t.layers.size(); l++) {
    const LayerTensors& L = t.layers[l];
    Workspace::Scope scope(fp.ws);
    const bool local = d.is_local[l];
    ops::AttentionSpec spec{static_cast<int>(p.n_heads), static_cast<int>(p.n_kv_heads), static_cast<int>(p.d_head), d.attn_scale,
                            causal};
    spec.reroute_last_kv = fp.kv.at(static_cast<int64_t>(l));  // KV-Embedding
    spec.prefix_bias = fp.kv.bias;
    if (local) {
      spec.window_left = window_left;
      spec.window_right = window_right;
    }
    Tensor h = fp.ws.f32(x.rows, x.cols);
    ops::rms_norm(fp, x, L.attn_norm, h, eps);
    const Tensor a = blocks::self_attention(fp, h, L, spec, local ? &d.rope_local : &d.rope_global, eps);
    ops::linear(fp, a, L.attn_output, Tensor{}, h);
    ops::rms_norm(fp, h, L.post_attention_norm, h, eps);
    ops::add(fp, x, h, x);
    ops::rms_norm(fp, x, L.ffn_norm, h, eps);
    Tensor f = fp.ws.f32(x.rows, x.cols);
    blocks::mlp_glu(fp, h, L.ffn_gate, L.ffn_up, L.ffn_down, Activation::GeluTanh, f, /*accumulate=*/false);
    ops::rms_norm(fp, f, L.post_ffw_norm, f, eps);
    ops::add(fp, x, f, x);
    fp.after_layer(static_cast<int64_t>(l), x);
  }
  ops::rms_norm(fp, x, t.output_norm, x, eps);
}

}  // namespace embed::arch

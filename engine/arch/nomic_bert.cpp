// `nomic-bert`: nomic-embed-text v1 / v1.5 (and models fine-tuned from them). A BERT block
// (post-norm LayerNorm, word + token-type embeddings, bidirectional attention) with rotary
// positions instead of a position table (rotate-half, NEOX, base `rotary_emb_base`, the whole
// head), fused QKV without biases and a SwiGLU MLP without biases:
//   x = LN(x + Wo . attn(rope(q), rope(k), v));  x = LN(x + fc2(fc11(x) * silu(fc12(x)))).
// Reference: nomic-ai's modeling_hf_nomic_bert.py (NomicBertEmbeddings, NomicBertBlock with
// prenorm=False, NomciBertGatedMLP), re-written from those equations in
// tools/refgen/nomic_bert_ref.py. GGUF names are llama.cpp's (fc11 = ffn_up, fc12 = ffn_gate).
//
// Long inputs: the checkpoints' config.json leaves rotary_scaling_factor null, and then nomic's
// code applies plain RoPE at every length up to n_positions (8192): that is what
// sentence-transformers runs and what this engine runs. A config with a scaling factor (dynamic
// NTK, nomic's opt-in for 8192) is refused by the converter rather than run approximately.
// llama.cpp's converter instead writes context_length 2048 (the trained length) for these
// checkpoints; a file it made keeps that limit here (longer texts need --long / --truncate).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& nomic_bert_spec();  // the description, at the end of this file
namespace {

class NomicBert final : public Architecture {
 public:
  NomicBert(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, nomic_bert_spec());
    t_ = load_tensors(w, nomic_bert_spec(), p_);
    fill_model_info(info_, nomic_bert_spec(), p_, t_, w, Pooling::Mean);
    info_.causal = p_.causal;
    info_.rank_head = RankHead{PoolKind::First, Activation::Tanh, false};
    rope_.mode = RopeMode::Neox;
    rope_.n_rot = static_cast<int>(p_.n_rot);
    rope_.freq_base = p_.rope_base;
    rope_.freq_scale = rope_freq_scale(p_, f, nomic_bert_spec().name);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, b.ids, x);
    if (!t_.token_types.empty()) ops::gather(fp, t_.token_types, b.type_ids, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, t_.token_embd_norm, t_.token_embd_norm_b, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    const ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), info_.causal};
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      const Tensor a = blocks::self_attention(fp, x, L, spec, &rope_, 0.0f);
      ops::linear(fp, a, L.attn_output, L.attn_output_b, x, /*accumulate=*/true);
      ops::layer_norm(fp, x, L.attn_output_norm, L.attn_output_norm_b, x, eps);
      blocks::mlp_glu(fp, x, L.ffn_gate, L.ffn_up, L.ffn_down, Activation::Silu, x, /*accumulate=*/true);
      ops::layer_norm(fp, x, L.layer_output_norm, L.layer_output_norm_b, x, eps);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  ops::RopeSpec rope_;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& nomic_bert_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "nomic-bert";
    s.hf_classes = {"NomicBertModel"};
    s.hparams = core_keys();
    key_row(s.hparams, "block_count").hf = "n_layer";
    key_row(s.hparams, "context_length").hf = "n_positions";
    key_row(s.hparams, "embedding_length").hf = "n_embd";
    key_row(s.hparams, "feed_forward_length").hf = "n_inner";
    key_row(s.hparams, "attention.head_count").hf = "n_head";
    append(s.hparams, {
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-12,
         .hf = "layer_norm_epsilon", .write = Write::IfInConfig},
        {.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 0, .hf = "@false"},
        {.key = "rope.freq_base", .field = &ArchParams::rope_base, .required = false, .fallback = 10000.0,
         .hf = "rotary_emb_base", .write = Write::IfInConfig},
        {.key = "rope.dimension_count", .field = &ArchParams::n_rot, .lo = 2, .hi = 4096, .required = false, .write = Write::Never},
        // Read so that a file asking for scaling fails by name (rope_freq_scale) instead of
        // running unscaled; the converter never writes it (rotary_scaling_factor must be null).
        {.key = "rope.scaling.type", .field = &ArchParams::rope_scaling, .required = false, .write = Write::Never},
        {.key = "rope.scaling.factor", .field = &ArchParams::rope_factor, .required = false, .fallback = 1.0, .write = Write::Never},
    });
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string b = "encoder.layers.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, "embeddings.word_embeddings.weight"),
        table("token_types.weight", Dim::Types, Dim::DModel, &M::token_types, "embeddings.token_type_embeddings.weight").optional(),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, "emb_ln.weight"),
        vector("token_embd_norm.bias", Dim::DModel, &M::token_embd_norm_b, "emb_ln.bias"),
        // Fused Q | K | V rows, as the checkpoint and llama.cpp keep them; split into the q/k/v
        // slots at load (load_tensors).
        matrix("blk.{L}.attn_qkv.weight", Dim::QkvRows, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "attn.Wqkv.weight"),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attn.out_proj.weight"),
        vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "attn.out_proj.bias").optional(),
        vector("blk.{L}.attn_output_norm.weight", Dim::DModel, &L::attn_output_norm, b + "norm1.weight"),
        vector("blk.{L}.attn_output_norm.bias", Dim::DModel, &L::attn_output_norm_b, b + "norm1.bias"),
        matrix("blk.{L}.ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "mlp.fc11.weight"),
        matrix("blk.{L}.ffn_gate.weight", Dim::DFF, Dim::DModel, &L::ffn_gate, b + "mlp.fc12.weight"),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.fc2.weight"),
        vector("blk.{L}.layer_output_norm.weight", Dim::DModel, &L::layer_output_norm, b + "norm2.weight"),
        vector("blk.{L}.layer_output_norm.bias", Dim::DModel, &L::layer_output_norm_b, b + "norm2.bias"),
    };
    s.hf_skip = {"*.rotary_emb.inv_freq", "cls.*"};  // recomputed; the MLM pretraining head
    // What the forward hard-codes (llama.cpp's converter asserts the same, except the scaling factor).
    s.hf_checks = {{"activation_function", "\"swiglu\""}, {"prenorm", "false"}, {"causal", "false"},
                   {"qkv_proj_bias", "false"}, {"mlp_fc1_bias", "false"}, {"mlp_fc2_bias", "false"},
                   {"rotary_emb_fraction", "1.0"}, {"rotary_emb_interleaved", "false"}, {"rotary_emb_scale_base", "null"},
                   {"rotary_scaling_factor", "null"}, {"moe_every_n_layers", "0"}, {"use_rms_norm", "false"},
                   {"parallel_block", "false"}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<NomicBert>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

// `new`: Alibaba-NLP's GTE "NewModel" encoders (gte-base-en-v1.5, gte-large-en-v1.5,
// gte-multilingual-base, gte-multilingual-reranker-base). A BERT block (post-norm, word
// (+ token-type) embeddings and a LayerNorm, bidirectional attention) with rotary positions
// instead of a position table (rotate-half, NEOX, the whole head), fused QKV with a bias and a
// gated MLP whose fused projection has no bias and holds the up rows first, the gated rows second:
//   x = N(x + Wo . attn(rope(q), rope(k), v) + bo);  [u | g] = W_ug . x;  x = N(x + W_down (u * act(g)) + b_down)
// N is a LayerNorm with bias (layer_norm_type "layer_norm"), or an RMSNorm without one
// ("rms_norm": new.attention.layer_norm_rms_epsilon present); act is new.hidden_act (HF's
// hidden_act, default "gelu" = erf).
// Reference: Alibaba-NLP/new-impl's modeling.py (NewEmbeddings, NewAttention with pack_qkv,
// NewGatedMLP, NewLayer, NTKScalingRotaryEmbedding, NewPooler), re-written from those equations
// in tools/refgen/gte_new_ref.py. llama.cpp has no converter for it (ggml-org/llama.cpp#9202), so
// the GGUF names are this project's, in llama.cpp's style (docs/convert.md).
//
// Positions: rope_scaling {"type": "ntk", "factor": f} in config.json, written as
// new.rope.scaling.type "ntk" + new.rope.scaling.factor f. new-impl builds its cos/sin cache at
// construction for max_position_embeddings * f positions, which exceeds max_position_embeddings
// for f > 1, so the scaled frequencies apply at EVERY length (not only past the trained one):
//   inv_freq_i = (theta * f)^(-2i/d) / f^(2/d)
// which is plain RoPE with base theta * f and positions scaled by f^(-2/d). f < 1 (new-impl then
// switches rule by length) and NTK's "mixed_b" variant are refused rather than run approximately.
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& gte_new_spec();  // the description, at the end of this file
namespace {

class GteNew final : public Architecture {
 public:
  GteNew(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, gte_new_spec());
    rms_ = f.has("new.attention.layer_norm_rms_epsilon");
    t_ = load_tensors(w, gte_new_spec(), p_);
    for (size_t l = 0; l < t_.layers.size(); l++) {
      // Fused [up | gate] rows (HF's up_gate_proj output, chunked: up first, activated second);
      // loaded as two row ranges (each its own packing), as load_qkv splits attn_qkv.
      LayerTensors& L = t_.layers[l];
      const std::string fused = layer_name("blk.{L}.ffn_up_gate.weight", static_cast<int64_t>(l));
      L.ffn_up = w.matrix_rows(fused, 2 * p_.d_ff, p_.d_model, 0, p_.d_ff);
      L.ffn_gate = w.matrix_rows(fused, 2 * p_.d_ff, p_.d_model, p_.d_ff, p_.d_ff);
      // LayerNorm blocks carry biases, RMSNorm blocks none: anything else is a broken file.
      for (const char* norm : {"attn_output_norm", "layer_output_norm"}) {
        const std::string bias = "blk." + std::to_string(l) + "." + norm + ".bias";
        if (w.has(bias) == rms_)
          fail(ErrorKind::Format, f.path() + ": '" + bias +
                                      (rms_ ? "' is present, but RMSNorm blocks (new.attention.layer_norm_rms_epsilon) have no bias"
                                            : "' is missing (LayerNorm blocks)"));
      }
    }
    act_ = activation(f, p_.hidden_act);
    fill_model_info(info_, gte_new_spec(), p_, t_, w, Pooling::Cls);
    info_.causal = false;
    // NewForSequenceClassification: classifier(tanh(pooler.dense(h[CLS]))), BERT's head.
    info_.rank_head = RankHead{PoolKind::First, Activation::Tanh, false};
    rope_.mode = RopeMode::Neox;
    rope_.n_rot = static_cast<int>(p_.n_rot);
    rope_.freq_base = p_.rope_base;
    rope_.freq_scale = 1.0f;
    const std::string& scaling = p_.rope_scaling;
    if (scaling == "ntk") {
      if (!(p_.rope_factor >= 1.0f))
        fail(ErrorKind::Unsupported, f.path() + ": new.rope.scaling.factor " + std::to_string(p_.rope_factor) +
                                         " is not supported (ntk needs a factor >= 1)");
      const double factor = p_.rope_factor, d = static_cast<double>(p_.n_rot);
      rope_.freq_base = static_cast<float>(static_cast<double>(p_.rope_base) * factor);
      rope_.freq_scale = static_cast<float>(std::pow(factor, -2.0 / d));
    } else if (!scaling.empty() && scaling != "none") {
      fail(ErrorKind::Unsupported, f.path() + ": new.rope.scaling.type '" + scaling + "' is not supported (none, ntk)");
    }
  }

  // HF's ACT2FN names that NewGatedMLP may get from hidden_act.
  static Activation activation(const gguf::File& f, const std::string& name) {
    if (name.empty() || name == "gelu") return Activation::GeluErf;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::GeluTanh;
    if (name == "silu" || name == "swish") return Activation::Silu;
    if (name == "relu") return Activation::Relu;
    fail(ErrorKind::Unsupported, f.path() + ": new.hidden_act '" + name +
                                     "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, silu, swish, relu)");
  }

  void block_norm(ForwardPass& fp, Tensor x, const Tensor& w, const Tensor& b) const {
    if (rms_) ops::rms_norm(fp, x, w, x, p_.norm_rms_eps);
    else ops::layer_norm(fp, x, w, b, x, p_.norm_eps);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, b.ids, x);
    if (!t_.token_types.empty()) ops::gather(fp, t_.token_types, b.type_ids, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, t_.token_embd_norm, t_.token_embd_norm_b, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    const ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), false};
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      const Tensor a = blocks::self_attention(fp, x, L, spec, &rope_, 0.0f);
      ops::linear(fp, a, L.attn_output, L.attn_output_b, x, /*accumulate=*/true);
      block_norm(fp, x, L.attn_output_norm, L.attn_output_norm_b);
      // x += W_down (act(gate) * up) + b_down: blocks::mlp_glu without its bias-free down.
      Tensor g = fp.ws.f32(x.rows, p_.d_ff), u = fp.ws.f32(x.rows, p_.d_ff);
      ops::linear(fp, x, L.ffn_gate, Tensor{}, g);
      ops::linear(fp, x, L.ffn_up, Tensor{}, u);
      ops::glu(fp, g, u, g, act_);
      ops::linear(fp, g, L.ffn_down, L.ffn_down_b, x, /*accumulate=*/true);
      block_norm(fp, x, L.layer_output_norm, L.layer_output_norm_b);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  ops::RopeSpec rope_;
  bool rms_ = false;
  Activation act_ = Activation::GeluErf;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& gte_new_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "new";
    s.hf_classes = {"NewModel", "NewForSequenceClassification"};
    s.hparams = core_keys();
    append(s.hparams, {
        // NewConfig's defaults where a config.json leaves a field out.
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-12,
         .hf = "layer_norm_eps", .write = Write::IfInConfig},
        {.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 0, .hf = "@false",
         .write = Write::Never},
        // Present iff layer_norm_type is "rms_norm" (the blocks' norms; the embeddings' stays a LayerNorm).
        {.key = "attention.layer_norm_rms_epsilon", .field = &ArchParams::norm_rms_eps, .required = false, .fallback = 0,
         .hf = "@rms_norm_eps", .write = Write::IfInConfig},
        {.key = "hidden_act", .field = &ArchParams::hidden_act, .required = false, .hf = "hidden_act", .write = Write::IfInConfig},
        {.key = "rope.freq_base", .field = &ArchParams::rope_base, .required = false, .fallback = 10000.0,
         .hf = "rope_theta", .write = Write::IfInConfig},
        {.key = "rope.dimension_count", .field = &ArchParams::n_rot, .lo = 2, .hi = 4096, .required = false, .write = Write::Never},
        // rope_scaling {"type": "ntk", "factor": f}: the rule in this file's header.
        {.key = "rope.scaling.type", .field = &ArchParams::rope_scaling, .required = false, .hf = "@rope_ntk.type",
         .write = Write::IfInConfig},
        {.key = "rope.scaling.factor", .field = &ArchParams::rope_factor, .required = false, .fallback = 1.0,
         .hf = "@rope_ntk.factor", .write = Write::IfInConfig},
    });
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string e = "embeddings.", b = "encoder.layer.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, e + "word_embeddings.weight"),
        // Only when type_vocab_size > 0 (NewConfig's default is 0: no table).
        table("token_types.weight", Dim::Types, Dim::DModel, &M::token_types, e + "token_type_embeddings.weight").optional(),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, e + "LayerNorm.weight"),
        vector("token_embd_norm.bias", Dim::DModel, &M::token_embd_norm_b, e + "LayerNorm.bias"),
        // Fused Q | K | V rows and their bias, split into the q/k/v slots at load (load_tensors).
        matrix("blk.{L}.attn_qkv.weight", Dim::QkvRows, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "attention.qkv_proj.weight"),
        vector("blk.{L}.attn_qkv.bias", Dim::QkvRows, static_cast<Tensor L::*>(nullptr), b + "attention.qkv_proj.bias"),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attention.o_proj.weight"),
        vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "attention.o_proj.bias"),
        vector("blk.{L}.attn_output_norm.weight", Dim::DModel, &L::attn_output_norm, b + "attn_ln.weight"),
        vector("blk.{L}.attn_output_norm.bias", Dim::DModel, &L::attn_output_norm_b, b + "attn_ln.bias").optional(),  // not RMS
        // Fused up | gate rows (up first: not llama.cpp's gate-first ffn_up), split by the constructor.
        matrix("blk.{L}.ffn_up_gate.weight", Dim::GluRows, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "mlp.up_gate_proj.weight"),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.down_proj.weight"),
        vector("blk.{L}.ffn_down.bias", Dim::DModel, &L::ffn_down_b, b + "mlp.down_proj.bias"),
        vector("blk.{L}.layer_output_norm.weight", Dim::DModel, &L::layer_output_norm, b + "mlp_ln.weight"),
        vector("blk.{L}.layer_output_norm.bias", Dim::DModel, &L::layer_output_norm_b, b + "mlp_ln.bias").optional(),
    };
    // NewForSequenceClassification (gte-multilingual-reranker-base): classifier(tanh(pooler.dense(h[CLS]))).
    append(s.weights, rank_head_weights("pooler.dense", "classifier"));
    s.hf_prefixes = {"new."};
    s.hf_skip = {"embeddings.position_ids", "*.rotary_emb.inv_freq"};  // buffers, recomputed
    // What the forward hard-codes (NewConfig's defaults where absent): rotary positions, packed
    // QKV, no logn scaling.
    s.hf_checks = {{"position_embedding_type", "\"rope\""}, {"pack_qkv", "true"}, {"logn_attention_scale", "false"}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<GteNew>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

// `modern-bert`: ModernBERT encoders (ModernBERT-base/large, modernbert-embed, gte-modernbert,
// granite-embedding-r2). Pre-norm LayerNorms without biases, no biases anywhere else, no position
// table: rotary positions (rotate-half, NEOX, the whole head) with two bases, and alternating
// attention: layer l is global (full bidirectional attention, base rope.freq_base) when
// l % attention.sliding_window_pattern == 0, else local (keys with |i - j| <= sliding_window / 2,
// base rope.freq_base_swa). Block 0 has no attention norm (the embeddings' norm precedes it).
//   x = LN(emb);  x += Wo . attn(rope(q), rope(k), v)(LN_attn(x));  x += down(gelu(a) * b), [a | b] = Wi . LN_mlp(x)
// and a final LayerNorm. The MLP is a fused GLU pair (ffn_up: 2 d_ff rows, the activated half
// first, GELU erf as HF's "gelu"), split into the gate/up slots at load.
// Rerankers (ModernBertForSequenceClassification): the rank head pools the CLS row or the mean
// (classifier.pooling_type from classifier_pooling), then cls.norm(gelu(cls . x + b)), then cls.output.
// Reference: HF transformers models/modernbert/modeling_modernbert.py (ModernBertEmbeddings,
// ModernBertEncoderLayer, ModernBertAttention, ModernBertMLP; the sliding-window mask is
// |i - j| <= local_attention // 2). GGUF names and keys are llama.cpp's (conversion/bert.py
// ModernBertModel, src/models/modern-bert.cpp: sliding_window = local_attention, the window
// symmetric around the query; sliding_window_pattern = global_attn_every_n_layers, dense first).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& modern_bert_spec();  // the description, at the end of this file
namespace {

class ModernBert final : public Architecture {
 public:
  ModernBert(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, modern_bert_spec());
    // llama.cpp's converter writes ModernBERT's norm_eps (a LayerNorm's) under the RMS key.
    if (!f.has("modern-bert.attention.layer_norm_epsilon") && f.has("modern-bert.attention.layer_norm_rms_epsilon"))
      p_.norm_eps = f.get<float>("modern-bert.attention.layer_norm_rms_epsilon");
    t_ = load_tensors(w, modern_bert_spec(), p_);
    for (size_t l = 0; l < t_.layers.size(); l++) {
      LayerTensors& L = t_.layers[l];
      if (l > 0 && L.attn_norm.empty())
        fail(ErrorKind::Format, f.path() + ": modern-bert block " + std::to_string(l) + " lacks blk." + std::to_string(l) +
                                    ".attn_norm.weight (only block 0 has none)");
      // Fused [activated | multiplied] rows: HF's Wi output chunked in two, act(first) * second.
      // Loaded as two row ranges (each its own packing), as load_qkv splits attn_qkv.
      const std::string fused = layer_name("blk.{L}.ffn_up.weight", static_cast<int64_t>(l));
      L.ffn_gate = w.matrix_rows(fused, 2 * p_.d_ff, p_.d_model, 0, p_.d_ff);
      L.ffn_up = w.matrix_rows(fused, 2 * p_.d_ff, p_.d_model, p_.d_ff, p_.d_ff);
    }
    // llama.cpp's converter writes HF's hidden_activation; derivatives with "silu" (SwiGLU) would
    // need another GLU, so they are refused rather than run with GELU.
    if (const std::string act = f.get_or<std::string>("modern-bert.hidden_activation", "gelu"); act != "gelu")
      fail(ErrorKind::Unsupported, f.path() + ": modern-bert.hidden_activation '" + act + "' is not supported (gelu)");
    fill_model_info(info_, modern_bert_spec(), p_, t_, w, Pooling::Mean);
    info_.causal = false;
    // ModernBertPredictionHead on the CLS row or the mean (classifier.pooling_type; llama.cpp's
    // default when the key is absent is mean): norm(gelu(dense(x))), then the classifier.
    if (p_.cls_pooling != -1 && p_.cls_pooling != 1 && p_.cls_pooling != 2)
      fail(ErrorKind::Unsupported, f.path() + ": modern-bert.classifier.pooling_type " + std::to_string(p_.cls_pooling) +
                                       " is not supported (1 mean, 2 cls)");
    info_.rank_head = RankHead{p_.cls_pooling == 2 ? PoolKind::First : PoolKind::Mean, Activation::GeluErf, false, p_.norm_eps};
    rope_global_.mode = rope_local_.mode = RopeMode::Neox;
    rope_global_.n_rot = rope_local_.n_rot = static_cast<int>(p_.n_rot);
    rope_global_.freq_base = p_.rope_base;
    rope_local_.freq_base = p_.rope_base_swa;
    rope_global_.freq_scale = rope_local_.freq_scale = rope_freq_scale(p_, f, modern_bert_spec().name);
  }

  bool is_local(size_t l) const {
    return p_.n_swa > 0 && p_.swa_pattern > 0 && static_cast<int64_t>(l) % p_.swa_pattern != 0;
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, fp.batch.ids, x);
    ops::layer_norm(fp, x, t_.token_embd_norm, Tensor{}, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    const int half_window = static_cast<int>(p_.n_swa / 2);
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      const bool local = is_local(l);
      ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), false};
      if (local) spec.window_left = spec.window_right = half_window;
      Tensor h = fp.ws.f32(x.rows, x.cols);
      const Tensor in = L.attn_norm.empty() ? x : h;
      if (!L.attn_norm.empty()) ops::layer_norm(fp, x, L.attn_norm, Tensor{}, h, eps);
      const Tensor a = blocks::self_attention(fp, in, L, spec, local ? &rope_local_ : &rope_global_, 0.0f);
      ops::linear(fp, a, L.attn_output, Tensor{}, x, /*accumulate=*/true);
      ops::layer_norm(fp, x, L.ffn_norm, Tensor{}, h, eps);
      blocks::mlp_glu(fp, h, L.ffn_gate, L.ffn_up, L.ffn_down, Activation::GeluErf, x, /*accumulate=*/true);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
    ops::layer_norm(fp, x, t_.output_norm, Tensor{}, x, eps);
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  ops::RopeSpec rope_global_, rope_local_;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& modern_bert_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "modern-bert";
    s.hf_classes = {"ModernBertModel", "ModernBertForMaskedLM"};
    s.hparams = core_keys();
    append(s.hparams, {
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-5,
         .hf = "norm_eps"},
        {.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 0, .hf = "@false"},
        // Written as llama.cpp's converter writes them; the forward reads neither (hidden_activation
        // must be gelu: hf_checks and the constructor).
        {.key = "vocab_size", .field = &ArchParams::vocab_size, .lo = 1, .hi = kMaxVocab, .required = false, .hf = "vocab_size"},
        {.key = "hidden_activation", .field = &ArchParams::hidden_act, .required = false, .hf = "hidden_activation",
         .write = Write::IfInConfig},
        // Global layers' base: rope_parameters.full_attention.rope_theta (transformers 5), or
        // global_rope_theta (the configs on the Hub); local layers': the sliding_attention entry,
        // or local_rope_theta. ModernBertConfig's defaults when neither is there.
        {.key = "rope.freq_base", .field = &ArchParams::rope_base, .required = false, .fallback = 160000.0, .hf = "@rope_theta"},
        {.key = "rope.freq_base_swa", .field = &ArchParams::rope_base_swa, .required = false, .fallback = 10000.0,
         .hf = "@rope_theta_swa"},
        {.key = "rope.dimension_count", .field = &ArchParams::n_rot, .lo = 2, .hi = 4096, .required = false, .write = Write::Never},
        // "none" unless config.json asks for scaling (llama.cpp's converter writes "none" always).
        {.key = "rope.scaling.type", .field = &ArchParams::rope_scaling, .required = false, .hf = "@rope.type_or_none"},
        {.key = "rope.scaling.factor", .field = &ArchParams::rope_factor, .required = false, .fallback = 1.0, .hf = "@rope.factor",
         .write = Write::IfInConfig},
        // The whole local window (local_attention, 128 in ModernBERT): a query sees |i - j| <= half of it.
        {.key = "attention.sliding_window", .field = &ArchParams::n_swa, .lo = 0, .hi = kMaxContext, .required = false,
         .fallback = 0, .hf = "local_attention"},
        // Layer l is global iff l % pattern == 0 (llama.cpp's dense-first pattern, its default 3):
        // global_attn_every_n_layers, checked against layer_types when config.json has both.
        {.key = "classifier.pooling_type", .field = &ArchParams::cls_pooling, .lo = -1, .hi = 4, .required = false, .fallback = -1,
         .hf = "@classifier_pooling", .write = Write::IfInConfig},
        {.key = "attention.sliding_window_pattern", .field = &ArchParams::swa_pattern, .lo = 1, .hi = kMaxLayers,
         .required = false, .fallback = 3, .hf = "@dense_first_pattern"},
    });
    s.hf_defaults = {{"attention.sliding_window_pattern", 3}, {"attention.sliding_window", 128}};  // ModernBertConfig's
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string b = "layers.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, "embeddings.tok_embeddings.weight"),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, "embeddings.norm.weight"),
        vector("blk.{L}.attn_norm.weight", Dim::DModel, &L::attn_norm, b + "attn_norm.weight").optional(),  // none in block 0
        // Fused Q | K | V rows, split into the q/k/v slots at load (load_tensors).
        matrix("blk.{L}.attn_qkv.weight", Dim::QkvRows, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "attn.Wqkv.weight"),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attn.Wo.weight"),
        vector("blk.{L}.ffn_norm.weight", Dim::DModel, &L::ffn_norm, b + "mlp_norm.weight"),
        // Fused GLU pair, split into the gate/up slots by the constructor.
        matrix("blk.{L}.ffn_up.weight", Dim::GluRows, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "mlp.Wi.weight"),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.Wo.weight"),
        vector("output_norm.weight", Dim::DModel, &M::output_norm, "final_norm.weight"),
    };
    // ModernBertForSequenceClassification: classifier(norm(act(head.dense(pooled)))), llama.cpp's
    // cls, cls.norm and cls.output. ModernBertForMaskedLM's head.* (before its decoder) is skipped
    // with it, as classifier pieces without a classifier (the converter's rule).
    append(s.weights, rank_head_weights("head.dense", "classifier"));
    for (WeightSpec& w : s.weights)
      if (w.name == "cls.norm.weight") w.hf = "head.norm.weight";
    s.hf_classes.push_back("ModernBertForSequenceClassification");
    s.hf_prefixes = {"model."};
    s.hf_skip = {"decoder.*"};  // ModernBertForMaskedLM's decoder (pretraining only)
    // What the forward hard-codes: no biases, GeGLU with erf GELU, the rotary on every layer, and
    // the head's erf GELU.
    s.hf_checks = {{"norm_bias", "false"}, {"attention_bias", "false"}, {"mlp_bias", "false"},
                   {"hidden_activation", "\"gelu\""}, {"classifier_activation", "\"gelu\""}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<ModernBert>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

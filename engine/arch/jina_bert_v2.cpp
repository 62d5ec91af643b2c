// `jina-bert-v2`: jina-embeddings-v2-small/base-en, -de, -es and jina-reranker-v1-* (Jina AI's
// JinaBert, "jina-bert-implementation"). BERT's post-norm layer (LayerNorm with biases, word +
// token-type embeddings, q/k/v/output projections with biases) with no position table: every
// attention logit gets the symmetric ALiBi bias, so texts of any length run with the same weights:
//   scores[h, i, j] = q_i . k_j / sqrt(d_head) - m_h |i - j|,  m_h = alibi_slope(h, n_heads, 8)
// (Press et al. 2022's slopes for max bias 8, the head count's largest power of two first, then
// the odd powers of the next one), computed per block of keys by the attention kernels, never as
// an n x n matrix. The MLP is a fused GEGLU pair with its own residual and norm:
//   x = LN(x + Wo . attn);  [g | u] = W_gl . x (no bias);  x = LN(x + W_o (gelu(g) * u) + b_o)
// with the activated half first and erf GELU (torch's nn.GELU()). Optional per-layer LayerNorms
// of q and k over the whole projection (attn_q_norm / attn_k_norm, weight and bias), applied
// when a checkpoint has them. Masked mean pooling (the models' sentence-transformers pipeline).
// Rerankers (JinaBertForSequenceClassification): classifier(tanh(pooler.dense(h[CLS]))), as
// BERT's; llama.cpp's converter drops the pooler, this one keeps it as `cls` and the classifier
// as `cls.output`.
// Reference: jinaai/jina-bert-implementation's modeling (JinaBertEmbeddings, JinaBertSelfAttention
// with its get_alibi_slopes, JinaBertGLUMLP), Hub remote code, re-written from those equations in
// tools/refgen/jina_bert_ref.py. GGUF names and keys are llama.cpp's (conversion/bert.py
// JinaBertV2Model, src/models/jina-bert-v2.cpp): gated_layers = ffn_up {E, 2F}, mlp.wo = ffn_down,
// mlp.layernorm = layer_output_norm; llama.cpp hard-codes the max bias 8 as well.
//
// llama.cpp's older files split the pair into ffn_gate (first half) and ffn_up (second), {E, F}
// each: read as well. Not run: jina-embeddings-v2-base-code's layout (jina-bert-v2-qk-post-norm:
// mlp.up_gated_layer with the activation on the other half, a second attention norm), which the
// converter refuses by its tensor names and the engine by attn_norm_2; ReGLU (feed_forward_type
// "reglu", which no published checkpoint uses).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& jina_bert_v2_spec();  // the description, at the end of this file
namespace {

// The ALiBi paper's max bias, which jina's get_alibi_slopes (and llama.cpp) fix at 8.
constexpr float kAlibiMaxBias = 8.0f;

class JinaBertV2 final : public Architecture {
 public:
  JinaBertV2(const gguf::File& f, WeightLoader& w) {
    const ArchSpec& spec = jina_bert_v2_spec();
    p_ = read_params(f, spec);
    t_ = load_tensors(w, spec, p_);
    qk_norms_.resize(t_.layers.size());
    for (size_t l = 0; l < t_.layers.size(); l++) {
      LayerTensors& L = t_.layers[l];
      auto name = [&](const char* pattern) { return layer_name(pattern, static_cast<int64_t>(l)); };
      if (w.has(name("blk.{L}.attn_norm_2.weight")))
        fail(ErrorKind::Unsupported, f.path() + ": jina-bert-v2 tensor '" + name("blk.{L}.attn_norm_2.weight") +
                                         "' is not supported (jina-embeddings-v2-base-code's layout; the engine runs "
                                         "jina-embeddings-v2-en/de/es and jina-reranker-v1)");
      const std::string up = name("blk.{L}.ffn_up.weight"), gate = name("blk.{L}.ffn_gate.weight");
      if (w.has(gate)) {
        // llama.cpp's files before it fused the pair: gated_layers' first half (activated) as
        // ffn_gate, the second as ffn_up, each {d_model, d_ff}.
        L.ffn_gate = w.matrix(gate, p_.d_ff, p_.d_model);
        L.ffn_up = w.matrix(up, p_.d_ff, p_.d_model);
      } else {
        // Fused [activated | multiplied] rows (gated_layers): split into the gate/up slots.
        L.ffn_gate = w.matrix_rows(up, 2 * p_.d_ff, p_.d_model, 0, p_.d_ff);
        L.ffn_up = w.matrix_rows(up, 2 * p_.d_ff, p_.d_model, p_.d_ff, p_.d_ff);
      }
      QkNorm& n = qk_norms_[l];
      n.q = w.optional_vector(name("blk.{L}.attn_q_norm.weight"), p_.q_rows());
      n.q_b = w.optional_vector(name("blk.{L}.attn_q_norm.bias"), p_.q_rows());
      n.k = w.optional_vector(name("blk.{L}.attn_k_norm.weight"), p_.kv_rows());
      n.k_b = w.optional_vector(name("blk.{L}.attn_k_norm.bias"), p_.kv_rows());
      if (n.q.empty() != n.k.empty() || (n.q.empty() && !(n.q_b.empty() && n.k_b.empty())))
        fail(ErrorKind::Format, f.path() + ": jina-bert-v2 block " + std::to_string(l) +
                                    " has an incomplete q/k LayerNorm (attn_q_norm and attn_k_norm weights go together)");
    }
    fill_model_info(info_, spec, p_, t_, w, Pooling::Mean);
    info_.causal = p_.causal;
    if (info_.causal) fail(ErrorKind::Unsupported, f.path() + ": jina-bert-v2.attention.causal is true; the encoder is bidirectional");
    info_.rank_head = RankHead{PoolKind::First, Activation::Tanh, false};
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, b.ids, x);
    if (!t_.token_types.empty()) ops::gather(fp, t_.token_types, b.type_ids, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, t_.token_embd_norm, t_.token_embd_norm_b, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), false};
    spec.alibi_max_bias = kAlibiMaxBias;
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      const QkNorm& n = qk_norms_[l];
      Workspace::Scope scope(fp.ws);
      Tensor a;
      if (n.q.empty()) {
        a = blocks::self_attention(fp, x, L, spec, /*rope=*/nullptr, 0.0f);
      } else {  // LayerNorm over each token's whole q and k (not per head), between projection and attention
        EMBED_CHECK(!fp.cache, "jina-bert-v2: the encoder runs whole sequences");
        Tensor q = fp.ws.f32(x.rows, L.q.rows), k = fp.ws.f32(x.rows, L.k.rows), v = fp.ws.f32(x.rows, L.v.rows);
        ops::linear(fp, x, L.q, L.q_b, q);
        ops::linear(fp, x, L.k, L.k_b, k);
        ops::linear(fp, x, L.v, L.v_b, v);
        ops::layer_norm(fp, q, n.q, n.q_b, q, eps);
        ops::layer_norm(fp, k, n.k, n.k_b, k, eps);
        a = fp.ws.f32(x.rows, q.cols);
        ops::attention(fp, q, k, v, a, spec);
      }
      ops::linear(fp, a, L.attn_output, L.attn_output_b, x, /*accumulate=*/true);  // x = x + attn . Wo + bo
      ops::layer_norm(fp, x, L.attn_output_norm, L.attn_output_norm_b, x, eps);
      Tensor g = fp.ws.f32(x.rows, L.ffn_gate.rows), u = fp.ws.f32(x.rows, L.ffn_up.rows);
      ops::linear(fp, x, L.ffn_gate, Tensor{}, g);
      ops::linear(fp, x, L.ffn_up, Tensor{}, u);
      ops::glu(fp, g, u, g, Activation::GeluErf);
      ops::linear(fp, g, L.ffn_down, L.ffn_down_b, x, /*accumulate=*/true);  // x = x + W_o z + b_o
      ops::layer_norm(fp, x, L.layer_output_norm, L.layer_output_norm_b, x, eps);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
  }

 private:
  struct QkNorm {
    Tensor q, q_b, k, k_b;  // LayerNorm over the whole q / k projection; empty when absent
  };
  ArchParams p_;
  ModelTensors t_;
  std::vector<QkNorm> qk_norms_;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& jina_bert_v2_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "jina-bert-v2";
    s.hf_classes = {"JinaBertModel", "JinaBertForMaskedLM", "JinaBertForSequenceClassification"};
    s.hparams = core_keys();
    append(s.hparams, {
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-12,
         .hf = "layer_norm_eps", .write = Write::IfInConfig},
        {.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 0, .hf = "@false"},
    });
    using L = LayerTensors;
    using M = ModelTensors;
    using T = Tensor L::*;
    const std::string e = "embeddings.", b = "encoder.layer.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, e + "word_embeddings.weight"),
        table("token_types.weight", Dim::Types, Dim::DModel, &M::token_types, e + "token_type_embeddings.weight").optional(),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, e + "LayerNorm.weight"),
        vector("token_embd_norm.bias", Dim::DModel, &M::token_embd_norm_b, e + "LayerNorm.bias"),
        matrix("blk.{L}.attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "attention.self.query.weight"),
        vector("blk.{L}.attn_q.bias", Dim::QRows, &L::q_b, b + "attention.self.query.bias"),
        matrix("blk.{L}.attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "attention.self.key.weight"),
        vector("blk.{L}.attn_k.bias", Dim::KVRows, &L::k_b, b + "attention.self.key.bias"),
        matrix("blk.{L}.attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "attention.self.value.weight"),
        vector("blk.{L}.attn_v.bias", Dim::KVRows, &L::v_b, b + "attention.self.value.bias"),
        // Optional LayerNorms of q and k (read by the constructor).
        vector("blk.{L}.attn_q_norm.weight", Dim::QRows, T(nullptr), b + "attention.self.layer_norm_q.weight").optional(),
        vector("blk.{L}.attn_q_norm.bias", Dim::QRows, T(nullptr), b + "attention.self.layer_norm_q.bias").optional(),
        vector("blk.{L}.attn_k_norm.weight", Dim::KVRows, T(nullptr), b + "attention.self.layer_norm_k.weight").optional(),
        vector("blk.{L}.attn_k_norm.bias", Dim::KVRows, T(nullptr), b + "attention.self.layer_norm_k.bias").optional(),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attention.output.dense.weight"),
        vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "attention.output.dense.bias"),
        vector("blk.{L}.attn_output_norm.weight", Dim::DModel, &L::attn_output_norm, b + "attention.output.LayerNorm.weight"),
        vector("blk.{L}.attn_output_norm.bias", Dim::DModel, &L::attn_output_norm_b, b + "attention.output.LayerNorm.bias"),
        // Fused GEGLU pair [activated | multiplied], split into the gate/up slots by the constructor.
        matrix("blk.{L}.ffn_up.weight", Dim::GluRows, Dim::DModel, T(nullptr), b + "mlp.gated_layers.weight"),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.wo.weight"),
        vector("blk.{L}.ffn_down.bias", Dim::DModel, &L::ffn_down_b, b + "mlp.wo.bias"),
        vector("blk.{L}.layer_output_norm.weight", Dim::DModel, &L::layer_output_norm, b + "mlp.layernorm.weight"),
        vector("blk.{L}.layer_output_norm.bias", Dim::DModel, &L::layer_output_norm_b, b + "mlp.layernorm.bias"),
    };
    // JinaBertForSequenceClassification: classifier(tanh(pooler.dense(h[CLS]))), BERT's head.
    append(s.weights, rank_head_weights("pooler.dense", "classifier"));
    s.hf_prefixes = {"bert."};
    // The MLM pretraining head (JinaBertForMaskedLM).
    s.hf_skip = {"embeddings.position_ids", "cls.*"};
    // What the forward hard-codes. JinaBertConfig's own default feed_forward_type is the plain
    // BERT MLP ("original"), so the key must say "geglu".
    s.hf_checks = {{"position_embedding_type", "\"alibi\""}, {"feed_forward_type", "\"geglu\"", false},
                   {"hidden_act", "\"gelu\""}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<JinaBertV2>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

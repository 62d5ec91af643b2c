// `mpnet`: MPNet encoders (all-mpnet-base-v2, multi-qa-mpnet-base-*, paraphrase-mpnet-*). BERT's
// post-norm layer (LayerNorm with biases, erf-GELU MLP) with no token types, RoBERTa-style
// absolute positions (the first token is position padding_idx + 1 = 2) and a relative position
// bias: one [buckets, heads] table, owned by the encoder and added by every layer, read through
// T5's bidirectional buckets (32, max distance 128). Reference: HF transformers
// models/mpnet/modeling_mpnet.py (MPNetEmbeddings, MPNetEncoder.compute_position_bias,
// MPNetSelfAttention). llama.cpp has no MPNet (ggml-org/llama.cpp#5881): the GGUF names are
// ours, in llama.cpp's style: BERT's names without token_types, plus attn_rel_b.weight {heads,
// buckets} (f32), and the key attention.relative_buckets_count (llama.cpp's t5 key).
//
// Checked against sentence-transformers on the tiny folder mpnet-tiny
// (tools/refgen/convert_make_fixtures.py, convert_vectors.py; tests/convert/convert_vectors_test.cpp).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& mpnet_spec();  // the description, at the end of this file
namespace {

// MPNetEmbeddings' padding_idx (hard-coded there, not read from config.json): positions start
// after it, so a sequence's token t reads row t + 2 of the table.
constexpr int64_t kPositionOffset = 2;
// MPNetEncoder.compute_position_bias's max_distance (a default argument, not a config field).
constexpr int kMaxDistance = 128;

class MPNet final : public Architecture {
 public:
  MPNet(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, mpnet_spec());
    t_ = load_tensors(w, mpnet_spec(), p_);
    if (p_.n_ctx <= kPositionOffset)
      fail(ErrorKind::Format, f.path() + ": mpnet.context_length (" + std::to_string(p_.n_ctx) + ") leaves no position after the padding rows");
    positions_ = t_.position_embd.slice_rows(kPositionOffset, p_.n_ctx - kPositionOffset);
    buckets_ = relative_buckets(static_cast<int>(p_.n_rel_buckets), kMaxDistance);
    p_.n_ctx -= kPositionOffset;  // the longest input (all-mpnet-base-v2: 514 rows, 512 tokens)
    fill_model_info(info_, mpnet_spec(), p_, t_, w, Pooling::Mean);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, b.ids, x);
    ops::gather(fp, positions_, b.positions, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, t_.token_embd_norm, t_.token_embd_norm_b, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), false};
    spec.bias_table = t_.attn_rel_b;  // computed once by the encoder, added in every layer
    spec.bias_buckets = buckets_;
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      const Tensor a = blocks::self_attention(fp, x, L, spec, /*rope=*/nullptr, 0.0f);
      ops::linear(fp, a, L.attn_output, L.attn_output_b, x, /*accumulate=*/true);  // x = x + attn . Wo + bo
      ops::layer_norm(fp, x, L.attn_output_norm, L.attn_output_norm_b, x, eps);
      blocks::mlp(fp, x, L.ffn_up, L.ffn_up_b, L.ffn_down, L.ffn_down_b, Activation::GeluErf, x, /*accumulate=*/true);
      ops::layer_norm(fp, x, L.layer_output_norm, L.layer_output_norm_b, x, eps);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  Tensor positions_;
  RelativeBuckets buckets_;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& mpnet_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "mpnet";
    s.hf_classes = {"MPNetModel", "MPNetForMaskedLM"};
    s.hparams = core_keys();
    append(s.hparams, {
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-12,
         .hf = "layer_norm_eps", .write = Write::IfInConfig},
        // llama.cpp's t5 key for the same table.
        {.key = "attention.relative_buckets_count", .field = &ArchParams::n_rel_buckets, .lo = 4, .hi = 4 * RelativeBuckets::kMaxFar,
         .hf = "relative_attention_num_buckets"},
    });
    s.hf_defaults = {{"attention.relative_buckets_count", 32}};  // MPNetConfig's default
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string e = "embeddings.", b = "encoder.layer.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, e + "word_embeddings.weight"),
        table("position_embd.weight", Dim::Ctx, Dim::DModel, &M::position_embd, e + "position_embeddings.weight"),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, e + "LayerNorm.weight"),
        vector("token_embd_norm.bias", Dim::DModel, &M::token_embd_norm_b, e + "LayerNorm.bias"),
        bias_table("attn_rel_b.weight", &M::attn_rel_b, "encoder.relative_attention_bias.weight"),
        matrix("blk.{L}.attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "attention.attn.q.weight"),
        vector("blk.{L}.attn_q.bias", Dim::QRows, &L::q_b, b + "attention.attn.q.bias"),
        matrix("blk.{L}.attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "attention.attn.k.weight"),
        vector("blk.{L}.attn_k.bias", Dim::KVRows, &L::k_b, b + "attention.attn.k.bias"),
        matrix("blk.{L}.attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "attention.attn.v.weight"),
        vector("blk.{L}.attn_v.bias", Dim::KVRows, &L::v_b, b + "attention.attn.v.bias"),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attention.attn.o.weight"),
        vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "attention.attn.o.bias"),
        vector("blk.{L}.attn_output_norm.weight", Dim::DModel, &L::attn_output_norm, b + "attention.LayerNorm.weight"),
        vector("blk.{L}.attn_output_norm.bias", Dim::DModel, &L::attn_output_norm_b, b + "attention.LayerNorm.bias"),
        matrix("blk.{L}.ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "intermediate.dense.weight"),
        vector("blk.{L}.ffn_up.bias", Dim::DFF, &L::ffn_up_b, b + "intermediate.dense.bias"),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "output.dense.weight"),
        vector("blk.{L}.ffn_down.bias", Dim::DModel, &L::ffn_down_b, b + "output.dense.bias"),
        vector("blk.{L}.layer_output_norm.weight", Dim::DModel, &L::layer_output_norm, b + "output.LayerNorm.weight"),
        vector("blk.{L}.layer_output_norm.bias", Dim::DModel, &L::layer_output_norm_b, b + "output.LayerNorm.bias"),
    };
    s.hf_prefixes = {"mpnet."};
    // MPNetModel's pooler (dense + tanh on <s>) feeds no embedding (sentence-transformers pools
    // the last hidden state); the MLM head is pretraining only.
    s.hf_skip = {"embeddings.position_ids", "pooler.*", "lm_head.*"};
    s.hf_checks = {{"hidden_act", "\"gelu\""}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<MPNet>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

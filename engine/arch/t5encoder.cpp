// `t5encoder`: the encoder of T5 (sentence-t5, GTR-T5 and other T5EncoderModel embedders).
// Pre-norm RMSNorm without mean or bias, no absolute positions: a relative position bias,
// block 0's [buckets, heads] table read through T5's bidirectional buckets (max distance 128)
// and added in every block, with no 1/sqrt(d) scale on q.k. The MLP is ReLU (wi, wo) or, when
// the file has ffn_gate, gated GELU (tanh form): wo(gelu_new(wi_0 h) * wi_1 h). A final RMSNorm.
// Reference: HF transformers models/t5/modeling_t5.py (T5Stack, T5Attention, T5LayerNorm,
// T5DenseActDense / T5DenseGatedActDense); GGUF names and keys are llama.cpp's (conversion/t5.py,
// src/models/t5-enc.cpp).
//
// Checked against sentence-transformers on the tiny folder t5-gtr-tiny (ReLU MLP, a Dense layer) and t5-gated-tiny (gated GELU)
// (tools/refgen/convert_make_fixtures.py, convert_vectors.py; tests/convert/convert_vectors_test.cpp).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& t5encoder_spec();  // the description, at the end of this file
namespace {

// T5Attention._relative_position_bucket's max_distance (config relative_attention_max_distance,
// 128 in every released T5; llama.cpp hard-codes it, so the converter refuses other values).
constexpr int kMaxDistance = 128;

class T5Encoder final : public Architecture {
 public:
  T5Encoder(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, t5encoder_spec());
    t_ = load_tensors(w, t5encoder_spec(), p_);
    if (t_.layers.front().attn_rel_b.empty())
      fail(ErrorKind::Format, f.path() + ": t5encoder needs block 0's position bias table enc.blk.0.attn_rel_b.weight");
    for (const LayerTensors& L : t_.layers)
      if (L.ffn_up.empty() || L.ffn_gate.empty() != t_.layers.front().ffn_gate.empty())
        fail(ErrorKind::Format, f.path() + ": t5encoder blocks need ffn_up and all or none ffn_gate (gated GELU or ReLU)");
    buckets_ = relative_buckets(static_cast<int>(p_.n_rel_buckets), kMaxDistance);
    fill_model_info(info_, t5encoder_spec(), p_, t_, w, Pooling::Mean);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, fp.batch.ids, x);  // no scaling, no positions
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    ops::AttentionSpec spec{n_heads, n_heads, d_head, /*scale=*/1.0f, false};  // T5 folds 1/sqrt(d) into its init
    spec.bias_table = t_.layers.front().attn_rel_b;  // block 0's bias, reused by every block
    spec.bias_buckets = buckets_;
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      Tensor h = fp.ws.f32(x.rows, x.cols);
      ops::rms_norm(fp, x, L.attn_norm, h, eps);
      const Tensor a = blocks::self_attention(fp, h, L, spec, /*rope=*/nullptr, 0.0f);
      ops::linear(fp, a, L.attn_output, Tensor{}, x, /*accumulate=*/true);
      ops::rms_norm(fp, x, L.ffn_norm, h, eps);
      if (!L.ffn_gate.empty()) blocks::mlp_glu(fp, h, L.ffn_gate, L.ffn_up, L.ffn_down, Activation::GeluTanh, x, /*accumulate=*/true);
      else blocks::mlp(fp, h, L.ffn_up, Tensor{}, L.ffn_down, Tensor{}, Activation::Relu, x, /*accumulate=*/true);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
    ops::rms_norm(fp, x, t_.output_norm, x, eps);
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  RelativeBuckets buckets_;
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& t5encoder_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "t5encoder";
    s.hf_classes = {"T5EncoderModel"};
    s.hparams = {
        {.key = "block_count", .field = &ArchParams::n_layers, .lo = 1, .hi = kMaxLayers, .hf = "num_layers"},
        // T5 has no position table: n_positions (512) is the trained length, llama.cpp's default.
        {.key = "context_length", .field = &ArchParams::n_ctx, .lo = 1, .hi = kMaxContext, .hf = "n_positions"},
        {.key = "embedding_length", .field = &ArchParams::d_model, .lo = 1, .hi = kMaxModelDim, .hf = "d_model"},
        {.key = "feed_forward_length", .field = &ArchParams::d_ff, .lo = 1, .hi = 16 * kMaxModelDim, .hf = "d_ff"},
        {.key = "attention.head_count", .field = &ArchParams::n_heads, .lo = 1, .hi = kMaxHeads, .hf = "num_heads"},
        // d_kv: the heads' width need not be d_model / heads (H * d_kv is the inner width).
        {.key = "attention.key_length", .field = &ArchParams::d_head, .lo = 1, .hi = 4096, .hf = "d_kv"},
        {.key = "attention.value_length", .field = &ArchParams::d_value, .lo = 1, .hi = 4096, .hf = "d_kv"},
        {.key = "attention.layer_norm_rms_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-6,
         .hf = "layer_norm_epsilon"},
        {.key = "attention.relative_buckets_count", .field = &ArchParams::n_rel_buckets, .lo = 4, .hi = 4 * RelativeBuckets::kMaxFar,
         .hf = "relative_attention_num_buckets"},
    };
    s.hf_defaults = {{"context_length", 512}, {"attention.relative_buckets_count", 32}};  // llama.cpp's / T5Config's
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string b = "encoder.block.{L}.layer.", g = "enc.blk.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, "shared.weight"),
        vector(g + "attn_norm.weight", Dim::DModel, &L::attn_norm, b + "0.layer_norm.weight"),
        matrix(g + "attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "0.SelfAttention.q.weight"),
        matrix(g + "attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "0.SelfAttention.k.weight"),
        matrix(g + "attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "0.SelfAttention.v.weight"),
        matrix(g + "attn_o.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "0.SelfAttention.o.weight"),
        bias_table(g + "attn_rel_b.weight", &L::attn_rel_b, b + "0.SelfAttention.relative_attention_bias.weight").optional(),
        vector(g + "ffn_norm.weight", Dim::DModel, &L::ffn_norm, b + "1.layer_norm.weight"),
        matrix(g + "ffn_gate.weight", Dim::DFF, Dim::DModel, &L::ffn_gate, b + "1.DenseReluDense.wi_0.weight").optional(),
        matrix(g + "ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "1.DenseReluDense.wi.weight").optional(),
        // The gated MLP's up projection has another HF name: the same GGUF tensor, routed only.
        matrix(g + "ffn_up.weight", Dim::DFF, Dim::DModel, static_cast<Tensor L::*>(nullptr), b + "1.DenseReluDense.wi_1.weight").optional(),
        matrix(g + "ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "1.DenseReluDense.wo.weight"),
        vector("enc.output_norm.weight", Dim::DModel, &M::output_norm, "encoder.final_layer_norm.weight"),
    };
    s.hf_skip = {"encoder.embed_tokens.weight"};  // tied to shared.weight
    s.hf_checks = {{"relative_attention_max_distance", "128"}};
    // llama.cpp's T5 files carry no pooling type and no Dense layer: refused (spec.h). A folder
    // without a sentence-transformers Pooling module gets mean, the pooling of sentence-t5 / GTR.
    s.pooling_key_fallback = static_cast<int>(Pooling::Mean);
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<T5Encoder>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

// Pre-norm SwiGLU decoder shared by llama, qwen2 and qwen3: description and forward.
#include "engine/arch/llama_family.h"

namespace embed::arch {

ArchSpec decoder_spec(std::string name, std::vector<std::string> hf_classes, bool qkv_bias, Fold q_fold, Fold k_fold) {
  ArchSpec s;
  s.name = std::move(name);
  s.hf_classes = std::move(hf_classes);
  s.hparams = decoder_keys();
  // llama.cpp's {arch}.attention.causal (read for every architecture there): absent = causal. A
  // member whose HF config can say otherwise (qwen2: gte-Qwen2's is_causal) sets its source.
  append(s.hparams, {{.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 1,
                      .write = Write::Never}});
  using L = LayerTensors;
  using M = ModelTensors;
  const std::string b = "layers.{L}.";
  auto bias = [&](WeightSpec w) { return qkv_bias ? w : w.optional(); };
  s.weights = {
      table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, "embed_tokens.weight"),
      vector("output_norm.weight", Dim::DModel, &M::output_norm, "norm.weight"),
      matrix("output.weight", Dim::Vocab, Dim::DModel, static_cast<Tensor M::*>(nullptr), "lm_head.weight").optional(),
      vector("blk.{L}.attn_norm.weight", Dim::DModel, &L::attn_norm, b + "input_layernorm.weight"),
      matrix("blk.{L}.attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "self_attn.q_proj.weight").folded(q_fold),
      bias(vector("blk.{L}.attn_q.bias", Dim::QRows, &L::q_b, b + "self_attn.q_proj.bias").folded(q_fold)),
      matrix("blk.{L}.attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "self_attn.k_proj.weight").folded(k_fold),
      bias(vector("blk.{L}.attn_k.bias", Dim::KVRows, &L::k_b, b + "self_attn.k_proj.bias").folded(k_fold)),
      matrix("blk.{L}.attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "self_attn.v_proj.weight"),
      bias(vector("blk.{L}.attn_v.bias", Dim::KVRows, &L::v_b, b + "self_attn.v_proj.bias")),
      matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "self_attn.o_proj.weight"),
      vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "self_attn.o_proj.bias").optional(),
      vector("blk.{L}.ffn_norm.weight", Dim::DModel, &L::ffn_norm, b + "post_attention_layernorm.weight"),
      matrix("blk.{L}.ffn_gate.weight", Dim::DFF, Dim::DModel, &L::ffn_gate, b + "mlp.gate_proj.weight"),
      matrix("blk.{L}.ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "mlp.up_proj.weight"),
      matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "mlp.down_proj.weight"),
  };
  append(s.weights, rank_head_weights("", ""));
  s.hf_prefixes = {"model."};
  s.hf_skip = {"*.rotary_emb.inv_freq"};  // recomputed at run time
  s.hf_checks = {{"hidden_act", "\"silu\""}, {"use_sliding_window", "false"}, {"is_causal", "true"}};
  return s;
}

namespace {

class Decoder final : public Architecture {
 public:
  Decoder(const gguf::File& f, WeightLoader& w, const ArchSpec& spec, const DecoderRecipe& r) {
    p_ = read_params(f, spec);
    t_ = load_tensors(w, spec, p_);
    fill_model_info(info_, spec, p_, t_, w, Pooling::Last);
    info_.causal = p_.causal;
    info_.rank_head = r.rank_head;
    rope_.mode = r.rope;
    rope_.n_rot = static_cast<int>(p_.n_rot);
    rope_.freq_base = p_.rope_base;
    rope_.freq_scale = rope_freq_scale(p_, f, spec.name);
  }

  // x = token_embd[ids]; per block: x += Wo . attn(rms(x)); x += down(silu(gate(rms(x))) * up(rms(x)));
  // x = rms(x, output_norm). Causal attention within each sequence, unless the file says
  // attention.causal = false (bidirectional: every token sees the whole sequence).
  void forward(ForwardPass& fp, Tensor x) const override {
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, fp.batch.ids, x);
    const int d_head = static_cast<int>(p_.d_head);
    ops::AttentionSpec spec{static_cast<int>(p_.n_heads), static_cast<int>(p_.n_kv_heads), d_head,
                            1.0f / std::sqrt(static_cast<float>(d_head)), info_.causal};
    spec.prefix_bias = fp.kv.bias;
    for (size_t l = 0; l < t_.layers.size(); l++) {
      const LayerTensors& L = t_.layers[l];
      Workspace::Scope scope(fp.ws);
      spec.reroute_last_kv = fp.kv.at(static_cast<int64_t>(l));  // KV-Embedding
      Tensor h = fp.ws.f32(x.rows, x.cols);
      ops::rms_norm(fp, x, L.attn_norm, h, eps);
      const Tensor a = blocks::self_attention(fp, h, L, spec, &rope_, eps);
      ops::linear(fp, a, L.attn_output, L.attn_output_b, x, /*accumulate=*/true);
      ops::rms_norm(fp, x, L.ffn_norm, h, eps);
      blocks::mlp_glu(fp, h, L.ffn_gate, L.ffn_up, L.ffn_down, Activation::Silu, x, /*accumulate=*/true);
      fp.after_layer(static_cast<int64_t>(l), x);
    }
    ops::rms_norm(fp, x, t_.output_norm, x, eps);
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  ops::RopeSpec rope_;
};

}  // namespace

std::unique_ptr<Architecture> create_decoder(const gguf::File& f, WeightLoader& w, const ArchSpec& spec, const DecoderRecipe& r) {
  return std::make_unique<Decoder>(f, w, spec, r);
}

}  // namespace embed::arch

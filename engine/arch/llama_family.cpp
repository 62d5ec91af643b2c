// Pre-norm SwiGLU decoder shared by llama, qwen2 and qwen3.
#include "engine/arch/llama_family.h"

namespace embed::arch {

DecoderDims read_decoder_dims(const gguf::File& f, const std::string& arch, RopeMode mode, ModelInfo& info) {
  HParams hp(f, arch);
  DecoderDims d;
  d.d_model = hp.count("embedding_length", 1, kMaxModelDim);
  d.n_layers = hp.count("block_count", 1, kMaxLayers);
  d.d_ff = hp.count("feed_forward_length", 1, 16 * kMaxModelDim);
  d.n_heads = static_cast<int>(hp.count("attention.head_count", 1, kMaxHeads));
  d.n_kv_heads = static_cast<int>(hp.count_or("attention.head_count_kv", d.n_heads, 1, kMaxHeads));
  if (d.n_heads % d.n_kv_heads)
    fail(ErrorKind::Format, f.path() + ": " + arch + ".attention.head_count (" + std::to_string(d.n_heads) +
                                ") is not a multiple of head_count_kv (" + std::to_string(d.n_kv_heads) + ")");
  const int64_t default_head = d.d_model % d.n_heads == 0 ? d.d_model / d.n_heads : 0;
  d.d_head = static_cast<int>(hp.count_or("attention.key_length", default_head, 1, 4096));
  if (hp.count_or("attention.value_length", d.d_head, 1, 4096) != d.d_head)
    fail(ErrorKind::Unsupported, f.path() + ": " + arch + ".attention.value_length differs from key_length");
  d.rms_eps = hp.real_or("attention.layer_norm_rms_epsilon", 1e-6f);
  d.rope.mode = mode;
  d.rope.n_rot = static_cast<int>(hp.count_or("rope.dimension_count", d.d_head, 2, d.d_head));
  d.rope.freq_base = hp.real_or("rope.freq_base", 10000.0f);
  d.rope.freq_scale = rope_freq_scale(f, hp, arch);

  info.arch = arch;
  info.d_model = d.d_model;
  info.n_layers = d.n_layers;
  info.n_ctx_train = hp.count("context_length", 1, kMaxContext);
  info.causal = true;
  info.n_vocab = vocab_rows(f, "token_embd.weight", d.d_model);
  return d;
}

DecoderWeights load_decoder_weights(WeightLoader& w, const DecoderDims& d, bool qkv_biases, bool qk_norm) {
  DecoderWeights dw;
  const int64_t E = d.d_model, Q = int64_t{d.n_heads} * d.d_head, KV = int64_t{d.n_kv_heads} * d.d_head;
  dw.tok_embd = w.table("token_embd.weight", vocab_rows(w.file(), "token_embd.weight", E), E);
  dw.output_norm = w.vector("output_norm.weight", E);
  for (int64_t l = 0; l < d.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    DecoderLayer L;
    L.attn_norm = w.vector(p + "attn_norm.weight", E);
    L.attn = load_qkv(w, p, Q, KV, E, qkv_biases);
    if (qk_norm) {
      L.attn.q_norm = w.vector(p + "attn_q_norm.weight", d.d_head);
      L.attn.k_norm = w.vector(p + "attn_k_norm.weight", d.d_head);
    }
    L.o = w.matrix(p + "attn_output.weight", E, Q);
    L.ffn_norm = w.vector(p + "ffn_norm.weight", E);
    L.gate = w.matrix(p + "ffn_gate.weight", d.d_ff, E);
    L.up = w.matrix(p + "ffn_up.weight", d.d_ff, E);
    L.down = w.matrix(p + "ffn_down.weight", E, d.d_ff);
    dw.layers.push_back(L);
  }
  return dw;
}

void decoder_forward(ForwardPass& fp, const DecoderWeights& w, const DecoderDims& d, Tensor x) {
  ops::gather(fp, w.tok_embd, fp.batch.ids, x);
  const ops::AttentionSpec spec{d.n_heads, d.n_kv_heads, d.d_head, 1.0f / std::sqrt(static_cast<float>(d.d_head)), true};
  for (const DecoderLayer& L : w.layers) {
    Workspace::Scope scope(fp.ws);
    Tensor h = fp.ws.f32(x.rows, x.cols);
    ops::rms_norm(fp, x, L.attn_norm, h, d.rms_eps);
    const Tensor a = blocks::self_attention(fp, h, L.attn, spec, &d.rope, d.rms_eps);
    ops::linear(fp, a, L.o, Tensor{}, x, /*accumulate=*/true);
    ops::rms_norm(fp, x, L.ffn_norm, h, d.rms_eps);
    blocks::mlp_glu(fp, h, L.gate, L.up, L.down, Activation::Silu, x, /*accumulate=*/true);
  }
  ops::rms_norm(fp, x, w.output_norm, x, d.rms_eps);
}

namespace {

class Decoder final : public Architecture {
 public:
  Decoder(const gguf::File& f, WeightLoader& w, const DecoderRecipe& r) {
    dims_ = read_decoder_dims(f, r.arch, r.rope, info_);
    info_.default_pooling = read_pooling(HParams(f, r.arch), Pooling::Last);
    info_.rank_head = r.rank_head;
    weights_ = load_decoder_weights(w, dims_, r.qkv_biases, r.qk_norm);
    load_rank_head(w, info_);
  }
  void forward(ForwardPass& fp, Tensor x) const override { decoder_forward(fp, weights_, dims_, x); }

 private:
  DecoderDims dims_;
  DecoderWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_decoder(const gguf::File& f, WeightLoader& w, const DecoderRecipe& r) {
  return std::make_unique<Decoder>(f, w, r);
}

}  // namespace embed::arch

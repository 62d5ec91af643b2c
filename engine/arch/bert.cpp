// `bert`: BERT-style encoders (all-MiniLM, bge, e5, BERT cross-encoders). Post-norm LayerNorm
// with biases, absolute position + token-type embeddings, bidirectional attention, GELU (erf,
// as HF's BertIntermediate "gelu") MLP. No final norm: the last layer's output is the hidden
// state. Reference: HF transformers models/bert/modeling_bert.py (BertEmbeddings, BertLayer).
#include "engine/arch/arch_common.h"

namespace embed::arch {
namespace {

struct Layer {
  blocks::AttentionWeights attn;
  Tensor o, o_b, attn_norm, attn_norm_b, up, up_b, down, down_b, out_norm, out_norm_b;
};

class Bert final : public Architecture {
 public:
  Bert(const gguf::File& f, WeightLoader& w) {
    // ---- hparams ----
    HParams hp(f, "bert");
    const int64_t E = hp.count("embedding_length", 1, kMaxModelDim);
    n_heads_ = static_cast<int>(hp.count("attention.head_count", 1, kMaxHeads));
    if (E % n_heads_) fail(ErrorKind::Format, f.path() + ": bert.embedding_length is not a multiple of bert.attention.head_count");
    d_head_ = static_cast<int>(E / n_heads_);
    const int64_t F = hp.count("feed_forward_length", 1, 16 * kMaxModelDim);
    eps_ = hp.real_or("attention.layer_norm_epsilon", 1e-12f);
    info_.arch = "bert";
    info_.d_model = E;
    info_.n_layers = hp.count("block_count", 1, kMaxLayers);
    info_.n_ctx_train = hp.count("context_length", 1, kMaxContext);
    info_.causal = hp.flag_or("attention.causal", false);
    info_.default_pooling = read_pooling(hp, Pooling::Mean);
    info_.n_vocab = vocab_rows(f, "token_embd.weight", E);
    info_.rank_head = RankHead{PoolKind::First, Activation::Tanh, false};

    // ---- weights ----
    tok_embd_ = w.table("token_embd.weight", info_.n_vocab, E);
    pos_embd_ = w.table("position_embd.weight", info_.n_ctx_train, E);
    if (const gguf::TensorInfo* tt = f.find_tensor("token_types.weight"))
      token_types_ = w.table("token_types.weight", std::clamp<int64_t>(tt->ne[1], 1, 16), E);
    embd_norm_ = w.vector("token_embd_norm.weight", E);
    embd_norm_b_ = w.vector("token_embd_norm.bias", E);
    for (int64_t l = 0; l < info_.n_layers; l++) {
      const std::string p = "blk." + std::to_string(l) + ".";
      Layer L;
      L.attn = load_qkv(w, p, E, E, E, /*biases=*/true);
      L.o = w.matrix(p + "attn_output.weight", E, E);
      L.o_b = w.optional_vector(p + "attn_output.bias", E);
      L.attn_norm = w.vector(p + "attn_output_norm.weight", E);
      L.attn_norm_b = w.vector(p + "attn_output_norm.bias", E);
      L.up = w.matrix(p + "ffn_up.weight", F, E);
      L.up_b = w.optional_vector(p + "ffn_up.bias", F);
      L.down = w.matrix(p + "ffn_down.weight", E, F);
      L.down_b = w.optional_vector(p + "ffn_down.bias", E);
      L.out_norm = w.vector(p + "layer_output_norm.weight", E);
      L.out_norm_b = w.vector(p + "layer_output_norm.bias", E);
      layers_.push_back(L);
    }
    load_rank_head(w, info_);
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    ops::gather(fp, tok_embd_, b.ids, x);
    if (!token_types_.empty()) ops::gather(fp, token_types_, b.type_ids, x, 1.0f, /*accumulate=*/true);
    ops::gather(fp, pos_embd_, b.positions, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, embd_norm_, embd_norm_b_, x, eps_);
    const ops::AttentionSpec spec{n_heads_, n_heads_, d_head_, 1.0f / std::sqrt(static_cast<float>(d_head_)), info_.causal};
    for (const Layer& L : layers_) {
      Workspace::Scope scope(fp.ws);
      const Tensor a = blocks::self_attention(fp, x, L.attn, spec, /*rope=*/nullptr, 0.0f);
      ops::linear(fp, a, L.o, L.o_b, x, /*accumulate=*/true);  // x = x + attn . Wo + bo
      ops::layer_norm(fp, x, L.attn_norm, L.attn_norm_b, x, eps_);
      blocks::mlp(fp, x, L.up, L.up_b, L.down, L.down_b, Activation::GeluErf, x, /*accumulate=*/true);
      ops::layer_norm(fp, x, L.out_norm, L.out_norm_b, x, eps_);
    }
  }

 private:
  int n_heads_ = 0, d_head_ = 0;
  float eps_ = 1e-12f;
  Tensor tok_embd_, pos_embd_, token_types_, embd_norm_, embd_norm_b_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> create_bert(const gguf::File& f, WeightLoader& w) { return std::make_unique<Bert>(f, w); }

}  // namespace embed::arch

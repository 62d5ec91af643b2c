// `bert`: BERT-style encoders (all-MiniLM, bge, e5, BERT cross-encoders) and XLM-RoBERTa bodies
// (bge-m3, multilingual-e5-base/large, bge-reranker-v2-m3), which llama.cpp also writes as `bert`
// with a `t5` (Unigram) vocabulary: the same layers, RoBERTa's positions (counted from
// pad_token_id + 1; those rows are dropped by the converter) and one token type. Post-norm LayerNorm
// with biases, absolute position + token-type embeddings, bidirectional attention, GELU (erf,
// as HF's BertIntermediate "gelu") MLP. No final norm: the last layer's output is the hidden
// state. Reference: HF transformers models/bert/modeling_bert.py (BertEmbeddings, BertLayer).
#include "engine/arch/arch_common.h"

namespace embed::arch {

const ArchSpec& bert_spec();  // the description, at the end of this file
namespace {

class Bert final : public Architecture {
 public:
  Bert(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, bert_spec());
    t_ = load_tensors(w, bert_spec(), p_);
    fill_model_info(info_, bert_spec(), p_, t_, w, Pooling::Mean);
    info_.causal = p_.causal;
    info_.rank_head = RankHead{PoolKind::First, Activation::Tanh, false};
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const BatchView& b = fp.batch;
    const float eps = p_.norm_eps;
    ops::gather(fp, t_.token_embd, b.ids, x);
    if (!t_.token_types.empty()) ops::gather(fp, t_.token_types, b.type_ids, x, 1.0f, /*accumulate=*/true);
    ops::gather(fp, t_.position_embd, b.positions, x, 1.0f, /*accumulate=*/true);
    ops::layer_norm(fp, x, t_.token_embd_norm, t_.token_embd_norm_b, x, eps);
    const int n_heads = static_cast<int>(p_.n_heads), d_head = static_cast<int>(p_.d_head);
    const ops::AttentionSpec spec{n_heads, n_heads, d_head, 1.0f / std::sqrt(static_cast<float>(d_head)), info_.causal};
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
};

}  // namespace

// ---- description: keys, weights, HF names ----
const ArchSpec& bert_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s;
    s.name = "bert";
    s.hf_classes = {"BertModel", "BertForMaskedLM", "BertForSequenceClassification", "XLMRobertaModel",
                    "XLMRobertaForSequenceClassification"};
    s.hparams = core_keys();
    append(s.hparams, {
        {.key = "attention.layer_norm_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-12,
         .hf = "layer_norm_eps", .write = Write::IfInConfig},
        {.key = "attention.causal", .field = &ArchParams::causal, .required = false, .fallback = 0, .hf = "@false"},
    });
    using L = LayerTensors;
    using M = ModelTensors;
    const std::string e = "embeddings.", b = "encoder.layer.{L}.";
    s.weights = {
        table("token_embd.weight", Dim::Vocab, Dim::DModel, &M::token_embd, e + "word_embeddings.weight"),
        table("token_types.weight", Dim::Types, Dim::DModel, &M::token_types, e + "token_type_embeddings.weight").optional(),
        table("position_embd.weight", Dim::Ctx, Dim::DModel, &M::position_embd, e + "position_embeddings.weight"),
        vector("token_embd_norm.weight", Dim::DModel, &M::token_embd_norm, e + "LayerNorm.weight"),
        vector("token_embd_norm.bias", Dim::DModel, &M::token_embd_norm_b, e + "LayerNorm.bias"),
        matrix("blk.{L}.attn_q.weight", Dim::QRows, Dim::DModel, &L::q, b + "attention.self.query.weight"),
        vector("blk.{L}.attn_q.bias", Dim::QRows, &L::q_b, b + "attention.self.query.bias"),
        matrix("blk.{L}.attn_k.weight", Dim::KVRows, Dim::DModel, &L::k, b + "attention.self.key.weight"),
        vector("blk.{L}.attn_k.bias", Dim::KVRows, &L::k_b, b + "attention.self.key.bias"),
        matrix("blk.{L}.attn_v.weight", Dim::KVRows, Dim::DModel, &L::v, b + "attention.self.value.weight"),
        vector("blk.{L}.attn_v.bias", Dim::KVRows, &L::v_b, b + "attention.self.value.bias"),
        matrix("blk.{L}.attn_output.weight", Dim::DModel, Dim::QRows, &L::attn_output, b + "attention.output.dense.weight"),
        vector("blk.{L}.attn_output.bias", Dim::DModel, &L::attn_output_b, b + "attention.output.dense.bias").optional(),
        vector("blk.{L}.attn_output_norm.weight", Dim::DModel, &L::attn_output_norm, b + "attention.output.LayerNorm.weight"),
        vector("blk.{L}.attn_output_norm.bias", Dim::DModel, &L::attn_output_norm_b, b + "attention.output.LayerNorm.bias"),
        matrix("blk.{L}.ffn_up.weight", Dim::DFF, Dim::DModel, &L::ffn_up, b + "intermediate.dense.weight"),
        vector("blk.{L}.ffn_up.bias", Dim::DFF, &L::ffn_up_b, b + "intermediate.dense.bias").optional(),
        matrix("blk.{L}.ffn_down.weight", Dim::DModel, Dim::DFF, &L::ffn_down, b + "output.dense.weight"),
        vector("blk.{L}.ffn_down.bias", Dim::DModel, &L::ffn_down_b, b + "output.dense.bias").optional(),
        vector("blk.{L}.layer_output_norm.weight", Dim::DModel, &L::layer_output_norm, b + "output.LayerNorm.weight"),
        vector("blk.{L}.layer_output_norm.bias", Dim::DModel, &L::layer_output_norm_b, b + "output.LayerNorm.bias"),
    };
    // BertForSequenceClassification: logits = classifier(tanh(pooler.dense(h[CLS]))), which is
    // llama.cpp's RANK head: cls (dense + tanh), then cls.output.
    append(s.weights, rank_head_weights("pooler.dense", "classifier"));
    // BertForMaskedLM's MLM head, for the SPLADE read-out (engine/readout.h; names in spec.h):
    // carried in the file, unused by the forward pass. The decoder matrix is usually tied to the
    // word embeddings and then absent from the checkpoint (and from the GGUF).
    using T = Tensor M::*;
    const std::string mlm = std::string(kMlmHead) + ".", pred = "cls.predictions.";
    append(s.weights, {
        matrix(mlm + "dense.weight", Dim::DModel, Dim::DModel, T(nullptr), pred + "transform.dense.weight").optional(),
        vector(mlm + "dense.bias", Dim::DModel, T(nullptr), pred + "transform.dense.bias").optional(),
        vector(mlm + "norm.weight", Dim::DModel, T(nullptr), pred + "transform.LayerNorm.weight").optional(),
        vector(mlm + "norm.bias", Dim::DModel, T(nullptr), pred + "transform.LayerNorm.bias").optional(),
        matrix(mlm + "output.weight", Dim::Vocab, Dim::DModel, T(nullptr), pred + "decoder.weight").optional(),
        vector(mlm + "output.bias", Dim::Vocab, T(nullptr), pred + "bias").optional(),
    });
    s.hf_prefixes = {"bert.", "roberta."};
    // RobertaClassificationHead: out_proj(tanh(dense(h[CLS]))), BERT's pooler + classifier by
    // other names (llama.cpp maps classifier.dense / classifier.out_proj to cls / cls.output too).
    s.hf_renames = {{"classifier.dense.", "pooler.dense."}, {"classifier.out_proj.", "classifier."}};
    s.hf_offset_positions = {"XLMRobertaModel", "XLMRobertaForSequenceClassification"};
    // cls.predictions.decoder.bias is cls.predictions.bias (tied); NSP's head has no use here.
    s.hf_skip = {"embeddings.position_ids", "cls.predictions.decoder.bias", "cls.seq_relationship.*"};
    s.hf_checks = {{"position_embedding_type", "\"absolute\""}};
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> { return std::make_unique<Bert>(f, w); };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch

// Shared helpers of the architecture files.
#include "engine/arch/arch_common.h"

namespace embed::arch {

Pooling read_pooling(const HParams& hp, Pooling fallback) {
  if (!hp.has("pooling_type")) return fallback;
  const int64_t v = hp.count("pooling_type", -1, 4);
  return v < 0 ? fallback : static_cast<Pooling>(v);
}

float rope_freq_scale(const gguf::File& f, const HParams& hp, const std::string& arch) {
  const std::string scaling = f.get_or<std::string>(hp.key("rope.scaling.type"), "none");
  if (scaling == "linear") return 1.0f / hp.real_or("rope.scaling.factor", 1.0f);
  if (scaling != "none")
    fail(ErrorKind::Unsupported, f.path() + ": " + arch + ".rope.scaling.type '" + scaling + "' is not supported (none, linear)");
  return 1.0f;
}

int64_t vocab_rows(const gguf::File& f, const std::string& name, int64_t d_model) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) fail(ErrorKind::Format, f.path() + ": missing tensor '" + name + "'");
  if (t->ne[0] != d_model)
    fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' has rows of " + std::to_string(t->ne[0]) +
                                " values, the embedding length is " + std::to_string(d_model));
  if (t->ne[1] > kMaxVocab)
    fail(ErrorKind::Format, f.path() + ": tensor '" + name + "' has " + std::to_string(t->ne[1]) + " rows, more than the limit of " +
                                std::to_string(kMaxVocab));
  return t->ne[1];
}

blocks::AttentionWeights load_qkv(WeightLoader& w, const std::string& p, int64_t q_rows, int64_t kv_rows, int64_t d_model,
                                  bool biases) {
  blocks::AttentionWeights a;
  if (w.has(p + "attn_qkv.weight")) {
    const int64_t total = q_rows + 2 * kv_rows;
    const Tensor qkv = w.matrix(p + "attn_qkv.weight", total, d_model);
    a.q = qkv.slice_rows(0, q_rows);
    a.k = qkv.slice_rows(q_rows, kv_rows);
    a.v = qkv.slice_rows(q_rows + kv_rows, kv_rows);
    const Tensor b = w.optional_vector(p + "attn_qkv.bias", total);
    if (!b.empty()) {
      const Tensor row = b.reshape(total, 1);  // slice as rows of one element, then back to [1, n]
      a.q_b = row.slice_rows(0, q_rows).reshape(1, q_rows);
      a.k_b = row.slice_rows(q_rows, kv_rows).reshape(1, kv_rows);
      a.v_b = row.slice_rows(q_rows + kv_rows, kv_rows).reshape(1, kv_rows);
    }
    return a;
  }
  a.q = w.matrix(p + "attn_q.weight", q_rows, d_model);
  a.k = w.matrix(p + "attn_k.weight", kv_rows, d_model);
  a.v = w.matrix(p + "attn_v.weight", kv_rows, d_model);
  if (biases) {
    a.q_b = w.vector(p + "attn_q.bias", q_rows);
    a.k_b = w.vector(p + "attn_k.bias", kv_rows);
    a.v_b = w.vector(p + "attn_v.bias", kv_rows);
  } else {
    a.q_b = w.optional_vector(p + "attn_q.bias", q_rows);
    a.k_b = w.optional_vector(p + "attn_k.bias", kv_rows);
    a.v_b = w.optional_vector(p + "attn_v.bias", kv_rows);
  }
  return a;
}

void load_rank_head(WeightLoader& w, ModelInfo& info) {
  const gguf::File& f = w.file();
  int64_t width = info.d_model;
  if (const gguf::TensorInfo* t = f.find_tensor("cls.weight")) {
    width = std::clamp<int64_t>(t->ne[1], 1, kMaxModelDim);
    info.cls = w.matrix("cls.weight", width, info.d_model);
    info.cls_b = w.optional_vector("cls.bias", width);
  }
  info.cls_norm = w.optional_vector("cls.norm.weight", width);
  info.cls_norm_b = w.optional_vector("cls.norm.bias", width);
  if (const gguf::TensorInfo* t = f.find_tensor("cls.output.weight")) {
    const int64_t n_out = std::clamp<int64_t>(t->ne[1], 1, 1 << 16);
    info.cls_out = w.matrix("cls.output.weight", n_out, width);
    info.cls_out_b = w.optional_vector("cls.output.bias", n_out);
  }
  const std::string labels_key = info.arch + ".classifier.output_labels";
  if (auto a = f.find_array(labels_key); a && a->elem_type == gguf::ValueType::STRING)
    for (std::string_view s : f.get_string_array(labels_key)) info.cls_labels.emplace_back(s);
}

}  // namespace embed::arch

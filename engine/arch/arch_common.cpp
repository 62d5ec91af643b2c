// Shared helpers and description pieces of the architecture files.
#include "engine/arch/arch_common.h"

namespace embed::arch {

Pooling read_pooling(const HParams& hp, Pooling fallback) {
  if (!hp.has(kPoolingTypeKey)) return fallback;
  const int64_t v = hp.count(kPoolingTypeKey, -1, 4);
  return v < 0 ? fallback : static_cast<Pooling>(v);
}

float rope_freq_scale(const ArchParams& p, const gguf::File& f, const std::string& arch) {
  if (p.rope_scaling == "linear") return 1.0f / p.rope_factor;
  if (!p.rope_scaling.empty() && p.rope_scaling != "none")
    fail(ErrorKind::Unsupported, f.path() + ": " + arch + ".rope.scaling.type '" + p.rope_scaling + "' is not supported (none, linear)");
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
    const std::string name = p + "attn_qkv.weight";
    a.q = w.matrix_rows(name, total, d_model, 0, q_rows);
    a.k = w.matrix_rows(name, total, d_model, q_rows, kv_rows);
    a.v = w.matrix_rows(name, total, d_model, q_rows + kv_rows, kv_rows);
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

namespace {

// `{arch}.dense_<n>_activation`: absent = identity (what llama.cpp applies).
std::optional<Activation> dense_activation(const gguf::File& f, const std::string& key) {
  const std::string name = f.get_or<std::string>(key, "identity");
  if (name == "identity") return std::nullopt;
  std::string list = "identity";
  for (const DenseActivation& a : kDenseActivations) {
    if (name == a.name) return a.act;
    list += std::string(", ") + a.name;
  }
  fail(ErrorKind::Unsupported, f.path() + ": " + key + " '" + name + "' is not supported (" + list + ")");
}

}  // namespace

void fill_model_info(ModelInfo& info, const ArchSpec& spec, const ArchParams& p, const ModelTensors& t, WeightLoader& w,
                     Pooling fallback) {
  const gguf::File& f = w.file();
  info.arch = spec.name;
  info.d_model = p.d_model;
  info.n_layers = p.n_layers;
  info.n_ctx_train = p.n_ctx;
  info.n_vocab = t.token_embd.rows;
  if (spec.pooling_key_fallback >= 0 && !f.has(spec.name + "." + kPoolingTypeKey))
    fail(ErrorKind::Unsupported,
         f.path() + ": " + spec.name + "." + kPoolingTypeKey + " is missing: llama.cpp's converter writes none for " + spec.name +
             " and leaves out sentence-transformers' Dense layers (GTR-T5 and sentence-t5 have one), so this file may not "
             "give the model's vectors; convert the model's folder with `embed convert`, which keeps them");
  info.default_pooling = read_pooling(HParams(f, spec.name), fallback);
  info.cls = t.cls, info.cls_b = t.cls_b, info.cls_norm = t.cls_norm, info.cls_norm_b = t.cls_norm_b;
  info.cls_out = t.cls_output, info.cls_out_b = t.cls_output_b;
  const std::string labels_key = spec.name + "." + kClassifierLabelsKey;
  if (auto a = f.find_array(labels_key); a && a->elem_type == gguf::ValueType::STRING)
    for (std::string_view s : f.get_string_array(labels_key)) info.cls_labels.emplace_back(s);
  int64_t width = p.d_model;
  for (int n = kFirstDense; w.has(dense_name(n) + ".weight"); n++) {
    const std::string name = dense_name(n);
    const int64_t out = std::clamp<int64_t>(f.find_tensor(name + ".weight")->ne[1], 1, 16 * kMaxModelDim);
    DenseLayer d;
    d.w = w.matrix(name + ".weight", out, width);
    d.b = w.optional_vector(name + ".bias", out);
    d.act = dense_activation(f, spec.name + "." + dense_key(n, "activation"));
    info.post_pool.push_back(d);
    width = out;
  }
}

std::vector<HParamSpec> core_keys() {
  return {
      {.key = "block_count", .field = &ArchParams::n_layers, .lo = 1, .hi = kMaxLayers, .hf = "num_hidden_layers"},
      {.key = "context_length", .field = &ArchParams::n_ctx, .lo = 1, .hi = kMaxContext, .hf = "max_position_embeddings"},
      {.key = "embedding_length", .field = &ArchParams::d_model, .lo = 1, .hi = kMaxModelDim, .hf = "hidden_size"},
      {.key = "feed_forward_length", .field = &ArchParams::d_ff, .lo = 1, .hi = 16 * kMaxModelDim, .hf = "intermediate_size"},
      {.key = "attention.head_count", .field = &ArchParams::n_heads, .lo = 1, .hi = kMaxHeads, .hf = "num_attention_heads"},
  };
}

std::vector<HParamSpec> decoder_keys() {
  std::vector<HParamSpec> rows = core_keys();
  const Write opt = Write::IfInConfig;
  append(rows, {
      {.key = "attention.head_count_kv", .field = &ArchParams::n_kv_heads, .lo = 1, .hi = kMaxHeads, .required = false,
       .hf = "num_key_value_heads", .write = opt},
      {.key = "attention.key_length", .field = &ArchParams::d_head, .lo = 1, .hi = 4096, .required = false, .hf = "head_dim", .write = opt},
      {.key = "attention.value_length", .field = &ArchParams::d_value, .lo = 1, .hi = 4096, .required = false, .hf = "head_dim",
       .write = opt},
      {.key = "attention.layer_norm_rms_epsilon", .field = &ArchParams::norm_eps, .required = false, .fallback = 1e-6,
       .hf = "rms_norm_eps", .write = opt},
      // RoPE: HF keeps these in rope_parameters / rope_scaling or at the top level ("@rope..."
      // sources, tools/convert/hparams.cpp); scaling types other than none/linear are refused at load.
      {.key = "rope.freq_base", .field = &ArchParams::rope_base, .required = false, .fallback = 10000.0, .hf = "@rope_theta", .write = opt},
      {.key = "rope.dimension_count", .field = &ArchParams::n_rot, .lo = 2, .hi = 4096, .required = false, .write = Write::Never},
      {.key = "rope.scaling.type", .field = &ArchParams::rope_scaling, .required = false, .hf = "@rope.type", .write = opt},
      {.key = "rope.scaling.factor", .field = &ArchParams::rope_factor, .required = false, .fallback = 1.0, .hf = "@rope.factor",
       .write = opt},
      {.key = "rope.scaling.original_context_length", .field = &ArchParams::rope_orig_ctx, .lo = 1, .hi = kMaxContext,
       .required = false, .hf = "@rope.original_max_position_embeddings", .write = opt},
      {.key = "rope.scaling.yarn_ext_factor", .field = &ArchParams::yarn_ext_factor, .required = false,
       .hf = "@rope.extrapolation_factor", .write = opt},
      {.key = "rope.scaling.yarn_attn_factor", .field = &ArchParams::yarn_attn_factor, .required = false,
       .hf = "@rope.attention_factor", .write = opt},
      {.key = "rope.scaling.yarn_beta_fast", .field = &ArchParams::yarn_beta_fast, .required = false, .hf = "@rope.beta_fast",
       .write = opt},
      {.key = "rope.scaling.yarn_beta_slow", .field = &ArchParams::yarn_beta_slow, .required = false, .hf = "@rope.beta_slow",
       .write = opt},
  });
  return rows;
}

HParamSpec& key_row(std::vector<HParamSpec>& rows, const char* key) {
  for (HParamSpec& h : rows)
    if (std::string(h.key) == key) return h;
  EMBED_CHECK(false, std::string("key_row: no row ") + key);
  return rows.front();
}

std::vector<WeightSpec> rank_head_weights(const std::string& hf_dense, const std::string& hf_out) {
  auto hf = [](const std::string& base, const char* suffix) { return base.empty() ? std::string() : base + suffix; };
  std::vector<WeightSpec> w = {
      matrix("cls.weight", Dim::Free, Dim::DModel, &ModelTensors::cls, hf(hf_dense, ".weight")),
      vector("cls.bias", Dim::ClsWidth, &ModelTensors::cls_b, hf(hf_dense, ".bias")),
      vector("cls.norm.weight", Dim::ClsWidth, &ModelTensors::cls_norm),
      vector("cls.norm.bias", Dim::ClsWidth, &ModelTensors::cls_norm_b),
      matrix("cls.output.weight", Dim::Labels, Dim::ClsWidth, &ModelTensors::cls_output, hf(hf_out, ".weight")),
      vector("cls.output.bias", Dim::Labels, &ModelTensors::cls_output_b, hf(hf_out, ".bias")),
  };
  for (WeightSpec& s : w) {
    s.required = false;
    s.head = true;
  }
  return w;
}

}  // namespace embed::arch

// Tensor routing (HF name -> GGUF name) and per-architecture weight tables. Names follow
// llama.cpp (gguf-py tensor_mapping.py / src/llama-arch.cpp); shapes follow its load_tensors.
#include "tools/convert/tensor_map.h"

#include <cctype>

#include "base/error.h"

namespace embed::convert {
namespace {

struct NamePair {
  const char* hf;    // "{L}" stands for the layer index
  const char* gguf;  // same placeholder
};

// BERT after "bert." is stripped (BertForSequenceClassification / BertForMaskedLM prefix).
constexpr NamePair kBertNames[] = {
    {"embeddings.word_embeddings", "token_embd"},
    {"embeddings.token_type_embeddings", "token_types"},
    {"embeddings.position_embeddings", "position_embd"},
    {"embeddings.LayerNorm", "token_embd_norm"},
    {"encoder.layer.{L}.attention.self.query", "blk.{L}.attn_q"},
    {"encoder.layer.{L}.attention.self.key", "blk.{L}.attn_k"},
    {"encoder.layer.{L}.attention.self.value", "blk.{L}.attn_v"},
    {"encoder.layer.{L}.attention.output.dense", "blk.{L}.attn_output"},
    {"encoder.layer.{L}.attention.output.LayerNorm", "blk.{L}.attn_output_norm"},
    {"encoder.layer.{L}.intermediate.dense", "blk.{L}.ffn_up"},
    {"encoder.layer.{L}.output.dense", "blk.{L}.ffn_down"},
    {"encoder.layer.{L}.output.LayerNorm", "blk.{L}.layer_output_norm"},
    // BertForSequenceClassification: logits = classifier(tanh(pooler.dense(h_cls))), which is
    // llama.cpp's RANK head: cls (dense + tanh) then cls.output.
    {"classifier", "cls.output"},
};

// Qwen2 / Qwen3 / Llama after "model." is stripped (the *ForCausalLM prefix).
constexpr NamePair kDecoderNames[] = {
    {"embed_tokens", "token_embd"},
    {"norm", "output_norm"},
    {"layers.{L}.input_layernorm", "blk.{L}.attn_norm"},
    {"layers.{L}.self_attn.q_proj", "blk.{L}.attn_q"},
    {"layers.{L}.self_attn.k_proj", "blk.{L}.attn_k"},
    {"layers.{L}.self_attn.v_proj", "blk.{L}.attn_v"},
    {"layers.{L}.self_attn.o_proj", "blk.{L}.attn_output"},
    {"layers.{L}.self_attn.q_norm", "blk.{L}.attn_q_norm"},
    {"layers.{L}.self_attn.k_norm", "blk.{L}.attn_k_norm"},
    {"layers.{L}.post_attention_layernorm", "blk.{L}.ffn_norm"},
    {"layers.{L}.mlp.gate_proj", "blk.{L}.ffn_gate"},
    {"layers.{L}.mlp.up_proj", "blk.{L}.ffn_up"},
    {"layers.{L}.mlp.down_proj", "blk.{L}.ffn_down"},
};

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Matches `base` against a pattern with an optional "{L}"; returns the GGUF base name.
std::optional<std::string> match(const NamePair& pair, const std::string& base) {
  const std::string hf = pair.hf, gguf = pair.gguf;
  const size_t at = hf.find("{L}");
  if (at == std::string::npos) return base == hf ? std::optional<std::string>(gguf) : std::nullopt;
  const std::string pre = hf.substr(0, at), post = hf.substr(at + 3);
  if (base.size() <= pre.size() + post.size() || !starts_with(base, pre) || !ends_with(base, post)) return std::nullopt;
  const std::string layer = base.substr(pre.size(), base.size() - pre.size() - post.size());
  if (layer.size() > 6) return std::nullopt;
  for (char c : layer)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  std::string out = gguf;
  out.replace(out.find("{L}"), 3, std::to_string(std::stoul(layer)));
  return out;
}

std::optional<TensorRoute> route_bert(std::string name, bool has_classifier) {
  if (starts_with(name, "bert.")) name = name.substr(5);
  // Old TF-era checkpoints name LayerNorm parameters gamma/beta.
  if (ends_with(name, ".gamma")) name = name.substr(0, name.size() - 6) + ".weight";
  if (ends_with(name, ".beta")) name = name.substr(0, name.size() - 5) + ".bias";
  if (name == "embeddings.position_ids" || starts_with(name, "cls.predictions.") || starts_with(name, "cls.seq_relationship."))
    return TensorRoute{TensorRoute::Skip, {}};
  if (starts_with(name, "pooler.dense.")) {
    // Only a classifier reads the pooler; for embeddings llama.cpp pools the last hidden state.
    if (!has_classifier) return TensorRoute{TensorRoute::Skip, {}};
    return TensorRoute{TensorRoute::Write, "cls" + name.substr(std::string("pooler.dense").size())};
  }
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string base = name.substr(0, dot), suffix = name.substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  for (const NamePair& p : kBertNames)
    if (auto g = match(p, base)) return TensorRoute{TensorRoute::Write, *g + suffix};
  return std::nullopt;
}

std::optional<TensorRoute> route_decoder(std::string name) {
  if (ends_with(name, ".rotary_emb.inv_freq")) return TensorRoute{TensorRoute::Skip, {}};  // recomputed at run time
  if (name == "lm_head.weight") return TensorRoute{TensorRoute::Write, "output.weight"};
  if (starts_with(name, "model.")) name = name.substr(6);
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string base = name.substr(0, dot), suffix = name.substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  for (const NamePair& p : kDecoderNames)
    if (auto g = match(p, base)) return TensorRoute{TensorRoute::Write, *g + suffix};
  return std::nullopt;
}

void add_layer(std::vector<WeightSpec>& t, uint32_t layer, const std::string& name, std::vector<int64_t> ne, bool required = true) {
  t.push_back(WeightSpec{"blk." + std::to_string(layer) + "." + name, std::move(ne), required});
}

std::vector<WeightSpec> bert_table(const ArchParams& p, bool has_classifier, int64_t n_labels) {
  const int64_t E = p.d_model, F = p.d_ff;
  std::vector<WeightSpec> t = {
      {"token_embd.weight", {E, 0}},         {"token_types.weight", {E, 0}}, {"position_embd.weight", {E, p.n_ctx}},
      {"token_embd_norm.weight", {E}},       {"token_embd_norm.bias", {E}},
  };
  for (uint32_t l = 0; l < p.n_layers; l++) {
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      add_layer(t, l, std::string(w) + ".weight", {E, E});
      add_layer(t, l, std::string(w) + ".bias", {E});
    }
    for (const char* n : {"attn_output_norm", "layer_output_norm"}) {
      add_layer(t, l, std::string(n) + ".weight", {E});
      add_layer(t, l, std::string(n) + ".bias", {E});
    }
    add_layer(t, l, "ffn_up.weight", {E, F});
    add_layer(t, l, "ffn_up.bias", {F});
    add_layer(t, l, "ffn_down.weight", {F, E});
    add_layer(t, l, "ffn_down.bias", {E});
  }
  if (has_classifier) {
    t.push_back({"cls.weight", {E, E}});
    t.push_back({"cls.bias", {E}});
    t.push_back({"cls.output.weight", {E, n_labels}});
    t.push_back({"cls.output.bias", {n_labels}});
  }
  return t;
}

std::vector<WeightSpec> decoder_table(const HfModel& m, const ArchParams& p) {
  const int64_t E = p.d_model, F = p.d_ff, Q = int64_t{p.n_heads} * p.d_head, KV = int64_t{p.n_kv_heads} * p.d_head;
  const bool qwen2 = m.arch == Arch::Qwen2, qwen3 = m.arch == Arch::Qwen3, llama = m.arch == Arch::Llama;
  std::vector<WeightSpec> t = {{"token_embd.weight", {E, 0}}, {"output_norm.weight", {E}}, {"output.weight", {E, 0}, false}};
  for (uint32_t l = 0; l < p.n_layers; l++) {
    add_layer(t, l, "attn_norm.weight", {E});
    add_layer(t, l, "attn_q.weight", {E, Q});
    add_layer(t, l, "attn_k.weight", {E, KV});
    add_layer(t, l, "attn_v.weight", {E, KV});
    add_layer(t, l, "attn_output.weight", {Q, E});
    // Qwen2 always has q/k/v biases; Llama has them when attention_bias is set.
    if (qwen2 || llama) {
      add_layer(t, l, "attn_q.bias", {Q}, qwen2);
      add_layer(t, l, "attn_k.bias", {KV}, qwen2);
      add_layer(t, l, "attn_v.bias", {KV}, qwen2);
    }
    if (llama) add_layer(t, l, "attn_output.bias", {E}, false);
    if (qwen3) {
      add_layer(t, l, "attn_q_norm.weight", {p.d_head});
      add_layer(t, l, "attn_k_norm.weight", {p.d_head});
    }
    add_layer(t, l, "ffn_norm.weight", {E});
    add_layer(t, l, "ffn_gate.weight", {E, F});
    add_layer(t, l, "ffn_up.weight", {E, F});
    add_layer(t, l, "ffn_down.weight", {F, E});
  }
  if (m.qwen3_reranker) t.push_back({"cls.output.weight", {E, 2}});
  return t;
}

}  // namespace

ArchParams read_arch_params(const HfModel& m) {
  ArchParams p;
  p.n_layers = config_u32(m, "num_hidden_layers");
  p.d_model = config_u32(m, "hidden_size");
  p.d_ff = config_u32(m, "intermediate_size");
  p.n_heads = config_u32(m, "num_attention_heads");
  p.n_kv_heads = config_opt_u32(m, "num_key_value_heads").value_or(p.n_heads);
  p.n_ctx = config_u32(m, "max_position_embeddings");
  if (p.n_layers > 4096) fail(ErrorKind::Format, "config.json: num_hidden_layers " + std::to_string(p.n_layers) + " is implausible");
  if (p.n_kv_heads == 0 || p.n_heads % p.n_kv_heads != 0)
    fail(ErrorKind::Format, "config.json: num_attention_heads " + std::to_string(p.n_heads) +
                                " is not a multiple of num_key_value_heads " + std::to_string(p.n_kv_heads));
  if (const auto hd = config_opt_u32(m, "head_dim")) {
    p.d_head = *hd;
  } else {
    if (p.d_model % p.n_heads != 0)
      fail(ErrorKind::Format, "config.json: hidden_size " + std::to_string(p.d_model) +
                                  " is not a multiple of num_attention_heads " + std::to_string(p.n_heads));
    p.d_head = p.d_model / p.n_heads;
  }
  if (p.d_head == 0 || (m.arch != Arch::Bert && p.d_head % 2 != 0))
    fail(ErrorKind::Format, "config.json: head dimension " + std::to_string(p.d_head) + " must be even and positive for RoPE");
  return p;
}

std::optional<TensorRoute> route_tensor(const HfModel& m, const std::string& hf_name, bool has_classifier) {
  return m.arch == Arch::Bert ? route_bert(hf_name, has_classifier) : route_decoder(hf_name);
}

std::vector<WeightSpec> weight_table(const HfModel& m, const ArchParams& p, bool has_classifier, int64_t n_labels) {
  return m.arch == Arch::Bert ? bert_table(p, has_classifier, n_labels) : decoder_table(m, p);
}

}  // namespace embed::convert

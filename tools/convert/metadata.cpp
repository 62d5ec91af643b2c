// Metadata keys of the converted GGUF. Which keys appear, and their types, follow llama.cpp's
// convert_hf_to_gguf.py (TextModel.set_gguf_parameters and the Bert/Qwen2/Qwen3/Llama classes).
#include "tools/convert/metadata.h"

#include <cstdlib>
#include <map>

#include "base/error.h"

namespace embed::convert {
namespace {

using nlohmann::json;

// Qwen3-Reranker prompt, hard-coded by llama.cpp's converter (Qwen3Model.set_gguf_parameters);
// the server substitutes {query} and {document}.
constexpr const char* kQwen3RerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

// RoPE settings live in `rope_parameters` (transformers >= 5) or `rope_scaling` (older), with
// the base either inside or at the top level.
void write_rope(const HfModel& m, const std::string& a, gguf::Writer& w) {
  const json& c = m.config;
  json rope = json::object();
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = c.find(key);
    if (it != c.end() && it->is_object()) {
      rope = *it;
      break;
    }
  }
  const std::string type = rope.value("rope_type", rope.value("type", std::string("default")));
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = rope.find(key);
    if (it == rope.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) fail(ErrorKind::Format, std::string("config.json: rope '") + key + "' must be a number");
    return it->get<double>();
  };
  if (type == "linear" || type == "yarn") {
    const auto factor = number("factor");
    if (!factor) fail(ErrorKind::Format, "config.json: rope type '" + type + "' without 'factor'");
    w.set_string(a + ".rope.scaling.type", type);
    w.set<float>(a + ".rope.scaling.factor", static_cast<float>(*factor));
    if (type == "yarn") {
      const auto orig = number("original_max_position_embeddings");
      if (!orig) fail(ErrorKind::Format, "config.json: yarn rope without original_max_position_embeddings");
      w.set<uint32_t>(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(*orig));
      if (auto v = number("extrapolation_factor")) w.set<float>(a + ".rope.scaling.yarn_ext_factor", static_cast<float>(*v));
      if (auto v = number("attention_factor")) w.set<float>(a + ".rope.scaling.yarn_attn_factor", static_cast<float>(*v));
      if (auto v = number("beta_fast")) w.set<float>(a + ".rope.scaling.yarn_beta_fast", static_cast<float>(*v));
      if (auto v = number("beta_slow")) w.set<float>(a + ".rope.scaling.yarn_beta_slow", static_cast<float>(*v));
    }
  } else if (type != "default") {
    fail(ErrorKind::Unsupported, "config.json: rope type '" + type + "' is not supported; supported: default, linear, yarn");
  }
  std::optional<double> theta = number("rope_theta");
  if (!theta) theta = config_opt_f64(m, "rope_theta");
  if (theta) w.set<float>(a + ".rope.freq_base", static_cast<float>(*theta));
}

}  // namespace

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
  }
  return "?";
}

std::optional<Pooling> effective_pooling(const HfModel& m, bool has_classifier) {
  if (has_classifier || m.qwen3_reranker) return Pooling::Rank;
  return m.pooling;
}

std::vector<std::string> classifier_labels(const HfModel& m, int64_t n_labels) {
  std::map<long, std::string> by_id;
  const auto it = m.config.find("id2label");
  if (it != m.config.end() && it->is_object()) {
    for (auto e = it->begin(); e != it->end(); ++e) {
      char* end = nullptr;
      const long id = std::strtol(e.key().c_str(), &end, 10);
      if (e.key().empty() || *end != '\0' || !e.value().is_string())
        fail(ErrorKind::Format, "config.json: id2label entry '" + e.key() + "' must map an integer id to a string");
      by_id[id] = e.value().get<std::string>();
    }
  }
  std::vector<std::string> labels;
  for (long id = 0; id < n_labels; id++) {
    const auto l = by_id.find(id);
    labels.push_back(l != by_id.end() ? l->second : "LABEL_" + std::to_string(id));
  }
  if (!by_id.empty() && static_cast<int64_t>(by_id.size()) != n_labels)
    fail(ErrorKind::Format, "config.json: id2label has " + std::to_string(by_id.size()) + " labels, the classifier has " +
                                std::to_string(n_labels) + " rows");
  return labels;
}

void write_model_metadata(const MetadataInputs& in, gguf::Writer& w) {
  const HfModel& m = *in.model;
  const ArchParams& p = *in.params;
  const std::string a = arch_name(m.arch);
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", in.name);
  w.set<uint32_t>(a + ".block_count", p.n_layers);
  w.set<uint32_t>(a + ".context_length", p.n_ctx);
  w.set<uint32_t>(a + ".embedding_length", p.d_model);
  w.set<uint32_t>(a + ".feed_forward_length", p.d_ff);
  w.set<uint32_t>(a + ".attention.head_count", p.n_heads);
  if (config_opt_u32(m, "num_key_value_heads")) w.set<uint32_t>(a + ".attention.head_count_kv", p.n_kv_heads);
  if (m.arch != Arch::Bert) write_rope(m, a, w);
  if (auto eps = config_opt_f64(m, "rms_norm_eps")) w.set<float>(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(*eps));
  if (auto eps = config_opt_f64(m, "layer_norm_eps")) w.set<float>(a + ".attention.layer_norm_epsilon", static_cast<float>(*eps));
  // llama.cpp's converter writes key/value length whenever config.json carries head_dim.
  if (config_opt_u32(m, "head_dim")) {
    w.set<uint32_t>(a + ".attention.key_length", p.d_head);
    w.set<uint32_t>(a + ".attention.value_length", p.d_head);
  }
  w.set<uint32_t>("general.file_type", file_type_id(in.type));
  if (m.arch == Arch::Bert) w.set<bool>(a + ".attention.causal", false);
  else if (m.config.value("is_causal", true) == false) w.set<bool>(a + ".attention.causal", false);
  if (m.arch == Arch::Llama) {
    w.set<uint32_t>(a + ".vocab_size", config_u32(m, "vocab_size"));
    w.set<uint32_t>(a + ".rope.dimension_count", p.d_head);
  }
  const bool has_classifier = !in.classifier_labels.empty();
  if (auto pooling = effective_pooling(m, has_classifier)) w.set<uint32_t>(a + ".pooling_type", static_cast<uint32_t>(*pooling));
  if (has_classifier) w.set_string_array(a + ".classifier.output_labels", in.classifier_labels);
  if (m.qwen3_reranker) {
    w.set_string_array(a + ".classifier.output_labels", {"yes", "no"});
    w.set_string("tokenizer.chat_template.rerank", kQwen3RerankTemplate);
    w.set_string_array("tokenizer.chat_templates", {"rerank"});
  }
  w.set<uint32_t>("general.quantization_version", 2);  // GGML_QNT_VERSION
}

}  // namespace embed::convert

// general.*, pooling, classifier, prompt and Dense keys. Which general keys appear, and their
// types, follow llama.cpp's convert_hf_to_gguf.py; the prompt keys are embed's (docs/convert.md).
#include "tools/convert/metadata.h"

#include <cstdlib>
#include <map>

#include "base/error.h"
#include "engine/prompts.h"
#include "tools/convert/hparams.h"

namespace embed::convert {

std::optional<Pooling> effective_pooling(const HfModel& m, bool has_classifier) {
  if (has_classifier) return Pooling::Rank;
  if (!m.pooling && m.spec->pooling_key_fallback >= 0) return static_cast<Pooling>(m.spec->pooling_key_fallback);
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
  const std::string a = m.spec->name;
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", in.name);
  write_hparams(m, w);
  w.set<uint32_t>("general.file_type", file_type_id(in.type));
  const bool has_classifier = !in.classifier_labels.empty();
  if (auto pooling = effective_pooling(m, has_classifier))
    w.set<uint32_t>(a + "." + arch::kPoolingTypeKey, static_cast<uint32_t>(*pooling));
  if (has_classifier) w.set_string_array(a + "." + arch::kClassifierLabelsKey, in.classifier_labels);
  if (m.token_head) {
    const arch::TokenHead& head = *m.spec->token_head;
    w.set_string("tokenizer.chat_template." + head.template_name, head.chat_template);
    w.set_string_array("tokenizer.chat_templates", {head.template_name});
  }
  for (size_t i = 0; i < m.dense.size(); i++) {
    const DenseModule& d = m.dense[i];
    const int n = arch::kFirstDense + static_cast<int>(i);
    w.set<uint32_t>(a + "." + arch::dense_key(n, "feat_in"), static_cast<uint32_t>(d.in));
    w.set<uint32_t>(a + "." + arch::dense_key(n, "feat_out"), static_cast<uint32_t>(d.out));
    if (d.activation != "identity") w.set_string(a + "." + arch::dense_key(n, "activation"), d.activation);
  }
  // sentence-transformers prompts, exactly as the folder has them (an empty text is a prompt too).
  if (!m.prompts.empty()) {
    std::vector<std::string> names, texts;
    for (const Prompt& p : m.prompts) {
      names.push_back(p.name);
      texts.push_back(p.text);
    }
    w.set_string_array(kPromptNamesKey, names);
    w.set_string_array(kPromptTextsKey, texts);
  }
  if (m.default_prompt) w.set_string(kPromptDefaultKey, *m.default_prompt);
  w.set<uint32_t>("general.quantization_version", 2);  // GGML_QNT_VERSION
}

}  // namespace embed::convert

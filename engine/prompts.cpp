// Prompt presets (the prefixes published on each family's model card), the model's prompts from
// GGUF metadata, and prompt resolution.
#include "engine/prompts.h"

#include <set>

#include "base/error.h"
#include "gguf/file.h"

namespace embed {

const std::vector<PromptPreset>& prompt_presets() {
  static const std::vector<PromptPreset> presets = {
      {"e5-query", "query: ", "E5 / multilingual-E5: queries, and both sides of symmetric tasks"},
      {"e5-passage", "passage: ", "E5 / multilingual-E5: documents"},
      {"bge-query", "Represent this sentence for searching relevant passages: ", "BGE v1.5: short queries for passage retrieval"},
      {"nomic-query", "search_query: ", "nomic-embed-text: queries"},
      {"nomic-document", "search_document: ", "nomic-embed-text: documents"},
      {"qwen3-query",
       "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:",
       "Qwen3-Embedding: queries (documents take no prefix)"},
      {"qwen3-sts", "Instruct: Retrieve semantically similar text\nQuery:", "Qwen3-Embedding: both sides of STS tasks"},
  };
  return presets;
}

ModelPrompts read_model_prompts(const gguf::File& f) {
  constexpr const char* kNames = kPromptNamesKey;
  constexpr const char* kTexts = kPromptTextsKey;
  constexpr const char* kDefault = kPromptDefaultKey;
  ModelPrompts p;
  const bool has_names = f.has(kNames), has_texts = f.has(kTexts);
  if (has_names != has_texts)
    fail(ErrorKind::Format, f.path() + ": metadata has '" + (has_names ? kNames : kTexts) + "' without '" + (has_names ? kTexts : kNames) +
                                "' (prompt names and texts come in pairs)");
  if (has_names) {
    const std::vector<std::string_view>& names = f.get_string_array(kNames);
    const std::vector<std::string_view>& texts = f.get_string_array(kTexts);
    if (names.size() != texts.size())
      fail(ErrorKind::Format, f.path() + ": '" + kNames + "' has " + std::to_string(names.size()) + " entries but '" + kTexts + "' has " +
                                  std::to_string(texts.size()) + " (expected the same length)");
    for (size_t i = 0; i < names.size(); i++) {
      if (names[i].empty()) fail(ErrorKind::Format, f.path() + ": '" + kNames + "' entry " + std::to_string(i) + " is empty");
      if (!p.texts.emplace(std::string(names[i]), std::string(texts[i])).second)
        fail(ErrorKind::Format, f.path() + ": '" + kNames + "' has the name '" + std::string(names[i]) + "' twice (names must be unique)");
    }
  }
  if (f.has(kDefault)) {
    p.default_name = f.get<std::string>(kDefault);
    if (!p.texts.count(p.default_name))
      fail(ErrorKind::Format, f.path() + ": '" + kDefault + "' is '" + p.default_name + "', which is not one of '" + kNames + "'");
  }
  return p;
}

std::string resolve_prompt(const ModelPrompts& model, const std::optional<std::string>& text, const std::string& name) {
  if (text) return *text;
  if (!name.empty()) {
    if (auto it = model.texts.find(name); it != model.texts.end()) return it->second;
    std::string list;
    for (const auto& [n, t] : model.texts) list += (list.empty() ? "" : ", ") + n;
    for (const PromptPreset& p : prompt_presets()) {
      if (name == p.name) return p.text;
      list += (list.empty() ? "" : ", ") + std::string(p.name);
    }
    fail(ErrorKind::InvalidArgument, "unknown prompt name '" + name + "' (this model's prompts and the presets: " + list + ")");
  }
  if (!model.default_name.empty()) return model.texts.at(model.default_name);
  return "";
}

}  // namespace embed

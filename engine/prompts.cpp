// Prompt presets: the prefixes published on each family's model card.
#include "tools/cli/presets.h"

#include "base/error.h"

namespace embed::cli {

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

std::string preset_prefix(const std::string& name) {
  std::string list;
  for (const PromptPreset& p : prompt_presets()) {
    if (name == p.name) return p.prefix;
    list += (list.empty() ? "" : ", ") + std::string(p.name);
  }
  fail(ErrorKind::InvalidArgument, "unknown --prompt '" + name + "' (presets: " + list + "; or give any text with --prefix)");
}

}  // namespace embed::cli

// Prompts: the texts some embedding models expect before the input ("query: ", an instruction).
// Owns the preset table shared by every front end, the model's own prompts read from GGUF
// metadata (embedding.prompt.*), and the one rule that picks the prompt of a request.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace embed {
namespace gguf {
class File;
}

struct PromptPreset {
  const char* name;
  const char* text;
  const char* use;
};

// Presets for model families whose cards publish a prefix (E5, BGE, Nomic, Qwen3-Embedding).
const std::vector<PromptPreset>& prompt_presets();

// A model's own prompts (sentence-transformers' `prompts` and `default_prompt_name`, written by
// `embed convert`), from these keys:
inline constexpr const char* kPromptNamesKey = "embedding.prompt.names";           // array of strings
inline constexpr const char* kPromptTextsKey = "embedding.prompt.texts";           // array of strings, same length
inline constexpr const char* kPromptDefaultKey = "embedding.prompt.default_name";  // string, optional; one of the names
struct ModelPrompts {
  std::map<std::string, std::string> texts;  // name -> text
  std::string default_name;                  // empty: none
};
// Throws embed::Error(Format) naming the key when the metadata is inconsistent.
ModelPrompts read_model_prompts(const gguf::File& f);

// The prompt of a request: explicit text (even empty) > prompt_name, looked up in the model's
// prompts, then in the presets > the model's default prompt > none (""). An unknown name throws
// embed::Error(InvalidArgument) listing the names there are.
std::string resolve_prompt(const ModelPrompts& model, const std::optional<std::string>& text, const std::string& name);

}  // namespace embed

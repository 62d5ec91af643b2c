// Prompt presets for model families whose embeddings expect a prefix (E5, BGE, Nomic,
// Qwen3-Embedding); `--prompt NAME` picks one, `--prefix TEXT` gives any other.
#pragma once

#include <string>
#include <vector>

namespace embed::cli {

struct PromptPreset {
  const char* name;
  const char* prefix;
  const char* use;
};

const std::vector<PromptPreset>& prompt_presets();
// The prefix of a preset; throws embed::Error(InvalidArgument) listing the presets when unknown.
std::string preset_prefix(const std::string& name);

}  // namespace embed::cli

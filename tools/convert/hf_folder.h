// What a HuggingFace / sentence-transformers model folder says about the model: config.json
// (which architecture description applies), modules.json (pooling, Dense layers, Normalize),
// config_sentence_transformers.json (prompts), and whether the description's LM-head classifier
// applies (Qwen3-Reranker). Reads JSON only; the weights are tools/convert/safetensors.h's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/arch/spec.h"
#include "engine/model.h"

namespace embed::convert {

// A sentence-transformers Dense module after pooling: y = activation(W x + b).
struct DenseModule {
  std::string path;        // sub-folder ("2_Dense")
  int64_t in = 0, out = 0;
  bool bias = true;
  std::string activation;  // "identity" or a name of arch::kDenseActivations
};

struct Prompt {
  std::string name, text;
};

struct HfModel {
  std::string dir;
  nlohmann::json config;                 // config.json
  std::string hf_architecture;           // config.json architectures[0]
  const arch::ArchSpec* spec = nullptr;  // the architecture it converts to
  std::optional<Pooling> pooling;        // from the sentence-transformers Pooling module, if any
  bool st_normalize = false;             // modules.json has a Normalize module (not a GGUF key; noted)
  std::vector<DenseModule> dense;        // Dense modules after pooling, in order
  std::vector<Prompt> prompts;           // config_sentence_transformers.json, in file order
  std::optional<std::string> default_prompt;
  bool token_head = false;               // the description's TokenHead applies (Qwen3-Reranker)
  int64_t position_offset = 0;           // position-table rows before position 0 (RoBERTa: pad_token_id + 1)
  bool splade_pooling = false;           // modules.json: a SparseEncoder's SpladePooling (max, relu) over an MLMTransformer
};

// Reads and checks the folder's JSON files; throws embed::Error naming the missing file or the
// unsupported value (architecture, pooling mode, sentence-transformers module).
HfModel read_hf_folder(const std::string& dir);

// The HF architecture names the converter accepts (every registered description's), for messages.
std::vector<std::string> supported_hf_architectures();

// Token id of `piece` in tokenizer.json (model vocab, then added tokens); throws if absent.
int64_t tokenizer_json_token_id(const std::string& dir, const std::string& piece);

// Parses a JSON file, failing with the path (missing: InvalidArgument; malformed: Format).
nlohmann::json read_json_file(const std::string& path);

}  // namespace embed::convert

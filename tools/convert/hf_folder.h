// What a HuggingFace / sentence-transformers model folder says about the model: config.json
// (architecture, hyperparameters), modules.json + 1_Pooling (pooling), reranker hints.
// Reads JSON only; the weights are tools/convert/safetensors.h's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace embed::convert {

// GGUF architectures the converter writes.
enum class Arch { Bert, Qwen2, Qwen3, Llama };
const char* arch_name(Arch a);  // the GGUF `general.architecture` string

// llama.cpp `llama_pooling_type` values, as stored in `%s.pooling_type`.
enum class Pooling : uint32_t { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

struct HfModel {
  std::string dir;
  nlohmann::json config;          // config.json
  std::string hf_architecture;    // config.json architectures[0]
  Arch arch = Arch::Bert;
  std::optional<Pooling> pooling;  // from the sentence-transformers Pooling module, if any
  bool st_normalize = false;       // modules.json has a Normalize module (not a GGUF key; noted)
  bool qwen3_reranker = false;     // Qwen3-Reranker: pooling RANK, cls.output from lm_head yes/no rows
};

// Reads and checks the folder's JSON files; throws embed::Error naming the missing file or the
// unsupported value (architecture, pooling mode, sentence-transformers module).
HfModel read_hf_folder(const std::string& dir);

// The HF architecture names the converter accepts, for messages and docs.
std::vector<std::string> supported_hf_architectures();

// Typed config.json access that fails with the key's name.
uint32_t config_u32(const HfModel& m, const char* key);
std::optional<uint32_t> config_opt_u32(const HfModel& m, const char* key);
std::optional<double> config_opt_f64(const HfModel& m, const char* key);

// Token id of `piece` in tokenizer.json (model vocab, then added tokens); throws if absent.
int64_t tokenizer_json_token_id(const std::string& dir, const std::string& piece);

// Parses a JSON file, failing with the path (missing: InvalidArgument; malformed: Format).
nlohmann::json read_json_file(const std::string& path);

}  // namespace embed::convert

// `embed convert`: a HuggingFace / sentence-transformers folder -> a GGUF file with llama.cpp's
// tensor names and metadata keys, for every architecture the engine describes (engine/arch/).
// The library behind the command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tools/convert/encode.h"

namespace embed::convert {

struct ConvertOptions {
  std::string model_dir;
  std::string out_path;
  OutType type = OutType::F16;
  std::string name;  // general.name; empty: the folder's name
};

struct ConvertSummary {
  std::string architecture;   // GGUF general.architecture
  std::string hf_architecture;
  std::string pooling;        // "mean", "cls", "last", "rank" or "" when the folder names none
  std::string tokenizer;      // tokenizer.ggml.model written ("bert", "gpt2", ...)
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  std::vector<std::string> notes;  // what the user should know (skipped tensors, Normalize, ...)
};

// Builds the GGUF in memory. Throws embed::Error naming the missing file, unsupported value
// or malformed tensor.
gguf::Writer build_gguf(const ConvertOptions& o, ConvertSummary* summary = nullptr);

// build_gguf, then writes o.out_path.
ConvertSummary convert_hf_to_gguf(const ConvertOptions& o);

// llama.cpp's size label ("23M", "596M", "1.5B") for a parameter count (gguf-py utility.py).
std::string size_label(uint64_t n_params);

}  // namespace embed::convert

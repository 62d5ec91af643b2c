// Small random-weight GGUF models built in the test (with the project's writer) for tests that
// assert behaviour rather than reference values: error handling, batch invariance.
#pragma once

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace embed::test {

struct SyntheticSpec {
  std::string arch = "bert";   // "bert", "qwen3" or "gemma3" (causal, sliding-window layers)
  int sliding_window = 8, sliding_window_pattern = 2;  // gemma3: every 2nd layer global
  int64_t d_model = 32, n_layers = 2, n_heads = 4, n_kv_heads = 2, d_ff = 64, n_vocab = 100, n_ctx = 64;
  bool rank_head = false;
  // Hooks to corrupt the model: skip a tensor, change a shape, overwrite values or metadata.
  std::function<bool(const std::string& name)> skip_tensor;
  std::function<void(const std::string& name, std::vector<int64_t>& ne)> reshape;
  std::function<void(const std::string& name, std::vector<float>& values)> edit;
  std::function<void(gguf::Writer& w)> edit_metadata;
};

// Writes the model to a unique temporary file and returns its path (removed by TempFile).
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& suffix);
  ~TempFile() { std::remove(path.c_str()); }
};

void write_synthetic(const SyntheticSpec& spec, const std::string& path);

}  // namespace embed::test

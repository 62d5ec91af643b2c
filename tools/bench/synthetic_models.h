// Random-weight GGUF models with the shapes of real embedding models, for throughput runs where
// the real weights cannot travel (a GPU machine gets at most 64 MiB of files): speed depends on
// the shapes, not on the values. Not for accuracy claims.
#pragma once

#include <string>
#include <vector>

#include "engine/tensor.h"

namespace embed::bench {

struct SyntheticShape {
  std::string name;  // what --synthetic takes
  std::string arch;  // "bert" or "qwen3"
  int64_t d_model, n_layers, n_heads, n_kv_heads, d_head, d_ff, n_vocab, n_ctx;
  DType weights;     // of every matrix and table (F16 or BF16); norms and biases are f32
};

// minilm-l6 (all-MiniLM-L6-v2), bge-large (bge-large-en-v1.5), qwen3-0.6b (Qwen3-Embedding-0.6B
// with a 32k vocabulary instead of 151k: the table is only gathered from).
const std::vector<SyntheticShape>& synthetic_shapes();
const SyntheticShape* find_synthetic_shape(const std::string& name);

// Writes the model (weights uniform with std 0.02, norm weights 1, biases 0) to `path`.
void write_synthetic_model(const SyntheticShape& s, const std::string& path);

}  // namespace embed::bench

// HF tensor names -> GGUF tensor names through the description's weight table, and the check of
// the converted tensors against that table (every tensor expected, with its shape; every
// required one present). Knows no architecture: the names and shapes are the description's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/arch/spec.h"

namespace embed::convert {

// What becomes of one HF tensor.
struct TensorRoute {
  enum Action { Write, Skip } action = Write;
  std::string gguf_name;                    // "blk.3.attn_q.weight" (Write only)
  const arch::WeightSpec* spec = nullptr;   // its table entry (Write only)
};
// nullopt when the HF name means nothing for the architecture (the caller refuses it).
std::optional<TensorRoute> route_tensor(const arch::ArchSpec& spec, const std::string& hf_name);

// A converted tensor as the table check sees it: ne in ggml order.
struct TensorShape {
  std::string name, source;  // GGUF name; HF name for messages
  std::vector<int64_t> ne;
};
// Every tensor must be in the table (for the n_layers blocks) with the shape the hyperparameters
// imply; every required entry must be present. Throws naming the tensor.
void check_against_table(const std::vector<TensorShape>& tensors, const arch::ArchSpec& spec, const arch::ArchParams& p);

}  // namespace embed::convert

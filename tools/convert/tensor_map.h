// HF tensor names -> llama.cpp GGUF tensor names, and the table of tensors (with ggml-order
// shapes) each architecture's GGUF must hold. The single place where tensor names appear.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/convert/hf_folder.h"

namespace embed::convert {

// Hyperparameters read from config.json, in the glossary's names.
struct ArchParams {
  uint32_t n_layers = 0;
  uint32_t d_model = 0;
  uint32_t d_ff = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t d_head = 0;
  uint32_t n_ctx = 0;
};
// Reads and checks them (divisibility of d_model by n_heads where no head_dim is given, ...).
ArchParams read_arch_params(const HfModel& m);

// What becomes of one HF tensor.
struct TensorRoute {
  enum Action { Write, Skip } action = Write;
  std::string gguf_name;  // "blk.3.attn_q.weight" (Write only)
};
// nullopt when the HF name means nothing for this architecture (the caller refuses it).
std::optional<TensorRoute> route_tensor(const HfModel& m, const std::string& hf_name, bool has_classifier);

// One tensor the GGUF may hold: ne in ggml order ({ne0} or {ne0, ne1}); 0 = any size.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> ne;
  bool required = true;
};
std::vector<WeightSpec> weight_table(const HfModel& m, const ArchParams& p, bool has_classifier, int64_t n_labels);

}  // namespace embed::convert

// The Gemma 3 block shared by gemma3 (causal) and gemma-embedding (bidirectional): what the two
// architecture files have in common. They differ in attention direction and window shape.
#pragma once

#include "engine/arch/arch_common.h"

namespace embed::arch {

// The family's description: keys (with llama.cpp's Gemma 3 converter defaults), weight table
// (HF Gemma3 names, norms folded to 1 + w), config.json checks.
ArchSpec gemma_spec(std::string name, std::vector<std::string> hf_classes);

struct GemmaDims {
  float attn_scale = 1.0f;       // applied to q.k (1/sqrt(d_head))
  std::vector<bool> is_local;    // per layer: sliding-window layer
  ops::RopeSpec rope_global, rope_local;
};

GemmaDims gemma_dims(const gguf::File& f, const std::string& arch, const ArchParams& p);
// Full forward to the final-norm hidden states; local layers use the given window.
void gemma_forward(ForwardPass& fp, const ModelTensors& t, const ArchParams& p, const GemmaDims& d, bool causal,
                   int window_left, int window_right, Tensor x);

}  // namespace embed::arch

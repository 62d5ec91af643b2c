// Model files for the CUDA model tests: the synthetic models re-encoded in other weight types,
// the committed fixture models, and real models named by environment variables.
#pragma once

#include <string>
#include <vector>

#include "engine/tensor.h"

namespace embed::test {

// Copies the GGUF at `src` to `dst` with every tensor of two or more dimensions re-encoded as
// `type` (F16, BF16 or Q8_0; Q8_0 rounds each block to its max / 127 scale), everything else
// (1-D tensors, metadata) unchanged.
void write_reencoded(const std::string& src, const std::string& dst, DType type);

// tests/fixtures/models/*/*.gguf, sorted; empty while none are committed.
std::vector<std::string> fixture_models();

// Existing files named by EMBED_MINILM_GGUF, EMBED_GEMMA_GGUF and EMBED_CUDA_TEST_MODELS
// (a ':'-separated list).
std::vector<std::string> env_models();

// True when every tensor of two or more dimensions (every matmul weight and table) is F32: then
// the CUDA backend computes in f32 in both precision modes.
bool weights_all_f32(const std::string& path);

}  // namespace embed::test

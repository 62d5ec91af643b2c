// Helpers shared by the architecture files: the includes they all need, pooling and vocab
// metadata, QKV loading (fused or split) and the optional classifier (rank) head.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/blocks.h"
#include "engine/model.h"
#include "engine/ops.h"
#include "engine/weights.h"
#include "gguf/file.h"

namespace embed::arch {

// `{arch}.pooling_type` (llama.cpp enum); absent or -1 (unspecified) gives `fallback`.
Pooling read_pooling(const HParams& hp, Pooling fallback);

// RoPE frequency scale from `{arch}.rope.scaling.type`: 1 for none, 1 / factor for linear; any
// other type is an Unsupported error naming it.
float rope_freq_scale(const gguf::File& f, const HParams& hp, const std::string& arch);

// Rows of an embedding table {d_model, rows}, range-checked: the vocabulary size.
int64_t vocab_rows(const gguf::File& f, const std::string& name, int64_t d_model);

// Q/K/V projections of block prefix `p` ("blk.N."): either attn_qkv (rows Q | K | V, split into
// views at load) or attn_q/attn_k/attn_v; biases when present (`biases` = expect them to exist
// for the split form).
blocks::AttentionWeights load_qkv(WeightLoader& w, const std::string& p, int64_t q_rows, int64_t kv_rows, int64_t d_model,
                                  bool biases);

// cls (+bias), cls.norm (+bias), cls.output (+bias) when present, and the class labels.
void load_rank_head(WeightLoader& w, ModelInfo& info);

// Factories, one per architecture file.
std::unique_ptr<Architecture> create_bert(const gguf::File& f, WeightLoader& w);
std::unique_ptr<Architecture> create_qwen2(const gguf::File& f, WeightLoader& w);
std::unique_ptr<Architecture> create_qwen3(const gguf::File& f, WeightLoader& w);
std::unique_ptr<Architecture> create_llama(const gguf::File& f, WeightLoader& w);
std::unique_ptr<Architecture> create_gemma3(const gguf::File& f, WeightLoader& w);
std::unique_ptr<Architecture> create_gemma_embedding(const gguf::File& f, WeightLoader& w);

}  // namespace embed::arch

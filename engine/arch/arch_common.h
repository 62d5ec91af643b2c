// Helpers shared by the architecture files: the includes they all need, shared key groups and
// weight-table pieces, the ModelInfo every architecture fills (pooling, vocabulary, classifier
// head, post-pool Dense layers), and QKV loading (fused or split).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/arch/spec.h"
#include "engine/blocks.h"
#include "engine/model.h"
#include "engine/ops.h"
#include "engine/weights.h"
#include "gguf/file.h"

namespace embed::arch {

// `{arch}.pooling_type` (llama.cpp enum); absent or -1 (unspecified) gives `fallback`.
Pooling read_pooling(const HParams& hp, Pooling fallback);

// RoPE frequency scale from the `rope.scaling.*` keys: 1 for none, 1 / factor for linear; any
// other type is an Unsupported error naming it.
float rope_freq_scale(const ArchParams& p, const gguf::File& f, const std::string& arch);

// Rows of an embedding table {d_model, rows}, range-checked: the vocabulary size.
int64_t vocab_rows(const gguf::File& f, const std::string& name, int64_t d_model);

// Q/K/V projections of block prefix `p` ("blk.N."): either attn_qkv (rows Q | K | V, split into
// views at load) or attn_q/attn_k/attn_v; biases when present (`biases` = expect them to exist
// for the split form).
blocks::AttentionWeights load_qkv(WeightLoader& w, const std::string& p, int64_t q_rows, int64_t kv_rows, int64_t d_model,
                                  bool biases);

// The ModelInfo every architecture shares: arch, sizes, vocabulary (token_embd rows), default
// pooling (`pooling_type`, else `fallback`), the classifier head and its labels, and the
// sentence-transformers Dense layers applied after pooling (dense_2, dense_3, ...).
void fill_model_info(ModelInfo& info, const ArchSpec& spec, const ArchParams& p, const ModelTensors& t, WeightLoader& w,
                     Pooling fallback);

// ---- pieces of descriptions ----

// block_count, context_length, embedding_length, feed_forward_length, attention.head_count.
std::vector<HParamSpec> core_keys();
// head_count_kv, key_length, value_length, layer_norm_rms_epsilon and the rope.* keys.
std::vector<HParamSpec> decoder_keys();
// The row of `key` (to adjust how a family member reads or writes it).
HParamSpec& key_row(std::vector<HParamSpec>& rows, const char* key);
// cls (+bias), cls.norm (+bias), cls.output (+bias), all optional; `hf_dense` / `hf_out` are the
// HF names of the dense+tanh layer and the output layer ("" when the checkpoint has none).
std::vector<WeightSpec> rank_head_weights(const std::string& hf_dense, const std::string& hf_out);
template <class T>
void append(std::vector<T>& to, const std::vector<T>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

}  // namespace embed::arch

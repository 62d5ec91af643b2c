// The declarative description of an architecture (ArchSpec): its GGUF hyperparameter keys, its
// weight table, and how a HuggingFace checkpoint maps onto both. The engine reads and checks a
// model through it (engine/arch/spec.cpp); tools/convert writes GGUF files from it. Tensor names,
// shapes and keys of an architecture are written here and in its own file, nowhere else.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/blocks.h"

namespace embed {
class Architecture;
class WeightLoader;
namespace gguf {
class File;
}
}  // namespace embed

namespace embed::arch {

// ---- hyperparameters ----

// Every hyperparameter any architecture reads, in the glossary's names (docs/glossary.md).
struct ArchParams {
  int64_t n_layers = 0, d_model = 0, d_ff = 0, n_ctx = 0;
  int64_t n_heads = 0, n_kv_heads = 0, d_head = 0, d_value = 0, n_rot = 0;
  int64_t n_swa = 0, swa_pattern = 0, vocab_size = 0, rope_orig_ctx = 0;
  int64_t n_rel_buckets = 0, rel_max_distance = 0;  // relative-position bias buckets (both directions)
  int64_t cls_pooling = -1;  // classifier.pooling_type: llama.cpp's pooling enum before the rank head (-1: the family's)
  float norm_eps = 0, rope_base = 0, rope_base_swa = 0, rope_factor = 0, final_softcap = 0;
  float yarn_ext_factor = 0, yarn_attn_factor = 0, yarn_beta_fast = 0, yarn_beta_slow = 0;
  bool causal = false;
  std::string rope_scaling;  // "none", "linear", "yarn"
  std::string hidden_act;    // the MLP activation by its HF name, for families whose config.json chooses it
  float norm_rms_eps = 0;    // RMSNorm eps of the blocks, for families whose embeddings keep a LayerNorm (norm_eps)
  int64_t q_rows() const { return n_heads * d_head; }
  int64_t kv_rows() const { return n_kv_heads * d_head; }
};

using ParamField = std::variant<int64_t ArchParams::*, float ArchParams::*, bool ArchParams::*, std::string ArchParams::*>;

// When `embed convert` writes a key.
enum class Write : uint8_t {
  Always,        // always: from config.json, else the architecture's HF default, else an error
  IfInConfig,    // only when config.json has a value (llama.cpp's converter's rule for most keys)
  IfNotDefault,  // only when the value differs from the engine's fallback
  Never,         // read by the engine only
};

inline constexpr double kDerived = std::numeric_limits<double>::quiet_NaN();  // fallback set by finish_params

// One `{arch}.<key>` metadata entry.
struct HParamSpec {
  const char* key;           // after "<arch>.", e.g. "attention.head_count_kv"
  ParamField field;          // where it lands in ArchParams
  int64_t lo = 0, hi = 0;    // integers: the accepted range (the engine's and the converter's)
  bool required = true;      // the engine fails without it; otherwise `fallback` applies
  double fallback = kDerived;
  const char* hf = "";       // config.json source: keys tried in order, '|'-separated, or "@..." (tools/convert/hparams.cpp)
  Write write = Write::Always;
};

// Generic keys every architecture may carry (written by the converter, read by the engine).
inline constexpr const char* kPoolingTypeKey = "pooling_type";                // {arch}.pooling_type
inline constexpr const char* kClassifierLabelsKey = "classifier.output_labels";
// sentence-transformers Dense modules after pooling: tensors dense_<n>.weight / .bias for
// n = 2, 3, ... in order (llama.cpp's names for EmbeddingGemma's 2_Dense and 3_Dense), keys
// {arch}.dense_<n>_feat_in / _feat_out (llama.cpp's) and {arch}.dense_<n>_activation (embed's;
// absent = identity, the only activation llama.cpp applies).
inline constexpr int kFirstDense = 2;
std::string dense_name(int n);                 // "dense_2"
std::string dense_key(int n, const char* what);  // "dense_2_feat_in"
struct DenseActivation {
  const char* name;
  Activation act;
};
inline constexpr DenseActivation kDenseActivations[] = {
    {"tanh", Activation::Tanh}, {"relu", Activation::Relu}, {"gelu", Activation::GeluErf}, {"silu", Activation::Silu}};

// BGE-M3's lexical and multi-vector read-outs after the final hidden state (FlagEmbedding's
// BGEM3 model): tensors cls.sparse.weight {d_model, 1} + cls.sparse.bias {1} and
// cls.colbert.weight {d_model, dim} + cls.colbert.bias {dim} (the names of the one existing GGUF
// convention for these heads), and keys {arch}.sparse_formula / {arch}.colbert_formula naming how
// they apply, since that convention's fork computes them differently. The engine refuses heads
// whose formula it does not know. kM3Formula:
//   sparse:  w_t = relu(W_s h_t + b_s) per token; the ids of <s>, </s>, <pad>, <unk> and weights
//            <= 0 dropped; the largest weight kept when an id repeats.
//   colbert: v_t = W_c h_t + b_c for every token after the first (CLS), each L2-normalized.
inline constexpr const char* kSparseHead = "cls.sparse";
inline constexpr const char* kColbertHead = "cls.colbert";
inline constexpr const char* kSparseFormulaKey = "sparse_formula";
inline constexpr const char* kColbertFormulaKey = "colbert_formula";
inline constexpr const char* kM3Formula = "bge-m3";
// SPLADE (sentence-transformers' SparseEncoder: MLMTransformer + SpladePooling(max, relu)) over a
// BertForMaskedLM: the MLM head is kept as
//   mlm.dense.weight {d_model, d_model} + mlm.dense.bias   (BertPredictionHeadTransform.dense)
//   mlm.norm.weight + mlm.norm.bias {d_model}               (its LayerNorm, eps {arch}.attention.layer_norm_epsilon)
//   mlm.output.weight {d_model, vocab}                      (the decoder; absent = tied to token_embd.weight)
//   mlm.output.bias {vocab}                                 (BertLMPredictionHead.bias)
// with {arch}.sparse_formula = kSpladeFormula:
//   logits_t = W_o LayerNorm(gelu(W_d h_t + b_d)) + b_o for every token t (special tokens too),
//   weight(v) = max over t of log(1 + relu(logits_t[v])); the ids with weight > 0 are kept.
inline constexpr const char* kMlmHead = "mlm";
inline constexpr const char* kSpladeFormula = "splade";

// ---- weights ----

// Every tensor slot of a block (named after the GGUF tensor); q/k/v come from AttentionWeights.
struct LayerTensors : blocks::AttentionWeights {
  Tensor attn_norm, attn_output, attn_output_b, attn_output_norm, attn_output_norm_b, post_attention_norm;
  Tensor ffn_norm, ffn_gate, ffn_up, ffn_up_b, ffn_down, ffn_down_b, post_ffw_norm, layer_output_norm, layer_output_norm_b;
  Tensor attn_rel_b;  // relative-position bias table of this block (Form::BiasTable)
};

// Every tensor slot outside the blocks, including the classifier (rank) head.
struct ModelTensors {
  Tensor token_embd, token_types, position_embd, token_embd_norm, token_embd_norm_b, output_norm;
  Tensor cls, cls_b, cls_norm, cls_norm_b, cls_output, cls_output_b;
  Tensor attn_rel_b;  // relative-position bias table shared by every block (Form::BiasTable)
  std::vector<LayerTensors> layers;
};

// A tensor dimension, in terms of the hyperparameters or (for sizes only the file knows) of the file.
enum class Dim : uint8_t {
  One,
  DModel, DFF, QRows, KVRows, DHead, Ctx,
  Heads,     // attention heads
  Buckets,   // relative-position buckets (n_rel_buckets)
  QkvRows,   // a fused attn_qkv: q_rows + 2 kv_rows (split into the q/k/v slots at load)
  GluRows,   // a fused GLU pair (ModernBERT's ffn_up): 2 d_ff rows, gated half first
  Vocab,     // rows of the embedding table (the vocabulary)
  Free,      // any size up to the model-dimension limit, read from the tensor (cls rows)
  Types,     // token types (1..16)
  Labels,    // classifier outputs (1..65536)
  ClsWidth,  // rows of cls.weight when present, else d_model
};

enum class Form : uint8_t {
  Matrix,  // matmul weight: engine [rows, cols], GGUF {cols, rows}
  Vector,  // norm weight or bias of `cols` values, loaded as f32
  Table,   // embedding table, rows gathered
  BiasTable,  // attention position bias [buckets, heads] (AttentionArgs::bias_table), loaded as f32
};

// What the converter does to an HF tensor on its way into the GGUF (done once, never per forward).
enum class Fold : uint8_t {
  None,
  AddOne,      // Gemma's RMSNorm multiplies by (1 + w): store 1 + w
  RopeNormQ,   // HF rotate-half RoPE -> adjacent pairs (llama.cpp NORM rope): q rows per head reordered
  RopeNormK,   // the same for k (n_kv_heads heads)
  VocabRows,   // rows beyond the tokenizer's vocabulary dropped (Gemma 3 pads its table)
};

struct WeightSpec {
  std::string name;                          // GGUF name; "{L}" is the block index
  Form form = Form::Matrix;
  Dim rows = Dim::One, cols = Dim::DModel;   // Vector: rows = One, length = cols
  bool required = true;
  Tensor ModelTensors::*global = nullptr;    // where the engine keeps it (none: carried, unused by the forward)
  Tensor LayerTensors::*layer = nullptr;
  std::string hf;                            // HF name after the prefix (same "{L}"); empty: none
  Fold fold = Fold::None;
  bool head = false;                         // classifier: converted only when the checkpoint has one

  WeightSpec optional() const { WeightSpec s = *this; s.required = false; return s; }
  WeightSpec folded(Fold f) const { WeightSpec s = *this; s.fold = f; return s; }
  bool per_layer() const { return name.find("{L}") != std::string::npos; }
};

WeightSpec matrix(std::string name, Dim rows, Dim cols, Tensor ModelTensors::*dst, std::string hf = {});
WeightSpec matrix(std::string name, Dim rows, Dim cols, Tensor LayerTensors::*dst, std::string hf = {});
WeightSpec vector(std::string name, Dim n, Tensor ModelTensors::*dst, std::string hf = {});
WeightSpec vector(std::string name, Dim n, Tensor LayerTensors::*dst, std::string hf = {});
WeightSpec table(std::string name, Dim rows, Dim cols, Tensor ModelTensors::*dst, std::string hf = {});
WeightSpec bias_table(std::string name, Tensor ModelTensors::*dst, std::string hf = {});
WeightSpec bias_table(std::string name, Tensor LayerTensors::*dst, std::string hf = {});

// ---- HuggingFace ----

// A config.json setting the GGUF architecture cannot express: the converter refuses other values.
struct HfCheck {
  const char* key;
  const char* expected;   // JSON literal ("\"silu\"", "false", "null") or "@d_head"
  bool absent_ok = true;  // a missing key passes
};

// A classifier built from rows of the LM head (Qwen3-Reranker: P(yes) from the "yes"/"no" rows).
struct TokenHead {
  std::vector<std::string> tokens;  // rows taken, in order; also the class labels
  std::string hint;                 // README heading "# <hint>", or in the folder/_name_or_path/model_type/class name
  std::string lm_head = "lm_head.weight", tied = "embed_tokens.weight";  // HF source (after the prefix)
  std::string template_name, chat_template;                               // tokenizer.chat_template.<name>
};

struct ArchSpec {
  std::string name;                      // GGUF general.architecture
  std::vector<std::string> hf_classes;   // config.json "architectures" values converted to it
  std::vector<HParamSpec> hparams;
  std::vector<std::pair<std::string, double>> hf_defaults;  // key -> value when config.json lacks it
  std::vector<WeightSpec> weights;
  std::vector<std::string> hf_prefixes;  // stripped from HF names ("model.", "bert.")
  std::vector<std::string> hf_skip;      // HF names (trailing '*' = prefix) that carry nothing for the GGUF
  // HF name prefixes (after hf_prefixes) read as another one of the table ("classifier.out_proj."
  // -> "classifier."): a family member that names the same weights differently (RoBERTa).
  std::vector<std::pair<std::string, std::string>> hf_renames;
  // Classes whose position ids count from pad_token_id + 1 (RoBERTa's create_position_ids): the
  // converter drops those first rows of the position table and shortens the context by as many,
  // as llama.cpp's converter does, so that the engine's positions 0, 1, ... index it.
  std::vector<std::string> hf_offset_positions;
  std::vector<HfCheck> hf_checks;
  std::optional<TokenHead> token_head;
  bool llama_cpp_dense = false;          // llama.cpp applies dense_2 / dense_3 (no bias, identity) for it
  // >= 0 (llama.cpp's pooling enum): the engine refuses a file of this architecture without
  // {arch}.pooling_type, and the converter writes this value for a folder whose modules name no
  // pooling. For t5encoder: llama.cpp's converter writes no pooling type there and drops
  // sentence-transformers' Dense layers (GTR-T5 and sentence-t5 have one), so a file without the
  // key may be missing part of the model.
  int pooling_key_fallback = -1;
  std::unique_ptr<Architecture> (*create)(const gguf::File&, WeightLoader&) = nullptr;

  const HParamSpec* find_hparam(const std::string& key) const;
};

// The registered architectures (engine/arch/registry.cpp).
const std::vector<const ArchSpec*>& architecture_specs();
const ArchSpec* find_architecture(const std::string& name);

// ---- shared by the engine and the converter ----

// Fills what the other values imply (n_kv_heads = n_heads, d_head = d_model / n_heads, ...) and
// checks consistency. Errors start with `where` (the file); `describe` names a key (GGUF key or
// config.json key).
void finish_params(ArchParams& p, const ArchSpec& spec, const std::string& where,
                   const std::function<std::string(const HParamSpec&)>& describe);

// Size of `d` under `p`; 0 for sizes only a file knows (Vocab, Types, Labels, ClsWidth).
int64_t dim_size(Dim d, const ArchParams& p);

// "{L}" in `pattern` replaced by `layer`.
std::string layer_name(const std::string& pattern, int64_t layer);

// ---- engine ----

// Reads every `{arch}.<key>` of the spec (range-checked, errors name the key) and finishes them.
ArchParams read_params(const gguf::File& f, const ArchSpec& spec);
// Loads and checks every tensor of the table; a file with `blk.N.attn_qkv` gets it split into q/k/v.
ModelTensors load_tensors(WeightLoader& w, const ArchSpec& spec, const ArchParams& p);

}  // namespace embed::arch

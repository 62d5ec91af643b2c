// The plain types of the public API (engine/api.h), below it so that engine parts (request
// resolution, inputs, row assembly) use them without the API's classes: Status and Result,
// ModelOptions, ModelDescription, Embeddings, LayerStates. Types only, no behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/model.h"
#include "engine/prompts.h"
#include "engine/request.h"

namespace embed {

// What a Status is about beyond its kind, for front ends that answer each case their own way (a
// hint, a transport code): they test this, never the message text.
enum class StatusCode {
  Other,
  InputTooLong,   // an input is longer than max_tokens and truncation was not asked for
  ClientGone,     // the caller cancelled (a server client that went away)
  ShuttingDown,   // the server's scheduler stopped taking requests
};

struct Status {
  ErrorKind kind = ErrorKind::InvalidArgument;
  std::string message;
  int64_t index = -1;  // the input (text, document, sequence id) the error is about, or -1
  StatusCode code = StatusCode::Other;
};

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status error) : error_(std::move(error)) {}
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& {
    EMBED_CHECK(ok(), "Result::value() on an error: " + error_.message);
    return *value_;
  }
  T& value() & {
    EMBED_CHECK(ok(), "Result::value() on an error: " + error_.message);
    return *value_;
  }
  T&& value() && {
    EMBED_CHECK(ok(), "Result::value() on an error: " + error_.message);
    return std::move(*value_);
  }
  const Status& error() const { return error_; }

 private:
  std::optional<T> value_;
  Status error_;
};

struct ModelOptions {
  Device device = Device::Cpu;
  int threads = 0;      // default threads of contexts on the CPU (0 = all cores)
  int cuda_device = 0;
  // Round activations the way llama.cpp's CPU backend does (CPU only; BackendOptions::
  // llama_cpp_rounding): vectors closer to ones made by llama.cpp from the same quantized file,
  // a little further from the model's exact values. See docs/cli.md (--compat llama.cpp).
  bool llama_cpp_rounding = false;
  // CPU kernel level (Auto: the best this machine runs, or EMBED_ISA) and the arithmetic of
  // matmuls and attention (F32: f32-grade on every level; BF16 / Int8: faster, see docs/cli.md
  // --compute-type).
  CpuIsa cpu_isa = CpuIsa::Auto;
  ComputeType compute_type = ComputeType::F32;
};

// What a loaded model is, for callers.
// The KV-Embedding band stored in a model by `embed kv-layers -o` (embed's own GGUF keys; other
// readers ignore them): [first, last] as two int32, and the per-layer intrinsic dimensions it was
// chosen from (f32, one per layer) with the number of sample texts (u32).
inline constexpr const char* kKvLayersKey = "embed.kv_embedding.layers";
inline constexpr const char* kKvDimensionsKey = "embed.kv_embedding.intrinsic_dimension";
inline constexpr const char* kKvSampleKey = "embed.kv_embedding.sample_texts";

struct ModelDescription {
  std::string path, arch, tokenizer;
  int64_t n_vocab = 0, d_model = 0, n_layers = 0;
  int64_t n_ctx = 0;            // longest input in tokens
  int64_t embedding_dim = 0;    // width of pooled vectors
  bool causal = false;
  Pooling default_pooling = Pooling::Mean;
  int64_t n_cls_out = 0;        // outputs of the rank head (0 = none)
  std::vector<std::string> cls_labels;
  bool has_rerank_template = false;
  bool rank_probability = false;  // rerank scores are probabilities (a softmax head), not logits
  ModelPrompts prompts;         // the model's own prompts (embedding.prompt.* metadata)
  std::string kernels;          // the kernel level in use: scalar, avx2, avx512, amx (CPU) or cuda
  ComputeType compute_type = ComputeType::F32;
  // KV-Embedding band stored in the file (kKvLayersKey), used when a request gives none.
  std::optional<std::pair<int, int>> kv_layers;
  std::vector<float> layer_dimensions;  // kKvDimensionsKey, when stored
  // BGE-M3 read-outs the file carries (engine/readout.h): a sparse head, a ColBERT head of this width.
  bool sparse_head = false;
  int64_t colbert_dim = 0;
};

// A sparse read-out (engine/readout.h): token ids with positive weights, ascending by id (each id once).
struct SparseRow {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// One L2-normalized vector per token after the first: rows x cols, row-major.
struct MultiVectorRow {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  const float* row(int64_t i) const { return data.data() + i * cols; }
};

// Row-major matrix: one row per text (per token with Pooling::None, see row_offsets). With a
// quantized Request::precision the rows are `codes` (code_bytes per row: int8 and binary bytes are
// signed, uint8 and ubinary unsigned) and `data` is empty; cols stays the number of dimensions.
struct Embeddings {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  Precision precision = Precision::Float32;
  int64_t code_bytes = 0;
  std::vector<uint8_t> codes;
  const uint8_t* code_row(int64_t i) const { return codes.data() + i * code_bytes; }
  std::vector<int32_t> n_tokens;      // tokens of each text (after truncation)
  std::vector<int64_t> row_offsets;   // Pooling::None, late chunking: rows of text i are [off[i], off[i+1])
  std::vector<CharSpan> spans;        // late chunking: each row's chunk of its text
  size_t truncated = 0;               // texts cut to max_tokens
  std::vector<std::string> warnings;
  // Read-outs of the same pass besides the pooled rows (Request::outputs), one per text when asked.
  std::vector<SparseRow> sparse;
  std::vector<MultiVectorRow> colbert;
  const float* row(int64_t i) const { return data.data() + i * cols; }
};

// Per-layer states of texts (Context::layer_states): after each block, the residual stream at each
// text's last token (before the final norm). data is [n_layers][rows][d_model].
struct LayerStates {
  int64_t n_layers = 0, rows = 0, d_model = 0;
  std::vector<float> data;
  std::vector<int32_t> n_tokens;  // tokens of each text (after truncation)
  const float* row(int64_t layer, int64_t i) const { return data.data() + (layer * rows + i) * d_model; }
};

}  // namespace embed

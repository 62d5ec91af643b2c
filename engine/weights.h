// Loading and checking an architecture's weights: each request names a GGUF tensor and the
// shape the hyperparameters imply; a missing tensor, a wrong shape or a dtype the backend cannot
// use fails with an error naming the tensor. Matrices and tables stay in their stored dtype
// (zero copy on the CPU); 1-D tensors (norms, biases) become f32. Lives as long as the model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "gguf/file.h"

namespace embed {

class WeightLoader {
 public:
  WeightLoader(const gguf::File& f, Backend& b);
  ~WeightLoader();
  WeightLoader(const WeightLoader&) = delete;
  WeightLoader& operator=(const WeightLoader&) = delete;

  const gguf::File& file() const { return f_; }
  Backend& backend() const { return b_; }
  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  // Matmul weight: GGUF dims {in, out} -> Tensor [out, in].
  Tensor matrix(const std::string& name, int64_t out, int64_t in);
  Tensor optional_matrix(const std::string& name, int64_t out, int64_t in);
  // Rows [r0, r0 + n) of the matmul weight `name` ([out, in]) as a weight of their own, so that a
  // backend that packs weights packs each slice whole (a fused attn_qkv split into q, k, v; a
  // slice of one packed tensor would still point at the whole packing).
  Tensor matrix_rows(const std::string& name, int64_t out, int64_t in, int64_t r0, int64_t n);
  // Norm weight or bias of n values -> f32 Tensor [1, n].
  Tensor vector(const std::string& name, int64_t n);
  Tensor optional_vector(const std::string& name, int64_t n);
  // Embedding table: GGUF dims {cols, rows} -> Tensor [rows, cols], rows decoded at gather time.
  Tensor table(const std::string& name, int64_t rows, int64_t cols);
  Tensor optional_table(const std::string& name, int64_t rows, int64_t cols);
  // Attention position bias table: GGUF dims {cols, rows} -> Tensor [rows, cols] in F32 (decoded
  // once from any stored type), for AttentionArgs::bias_table.
  Tensor bias_table(const std::string& name, int64_t rows, int64_t cols);

 private:
  const gguf::TensorInfo& find(const std::string& name) const;
  Tensor load(const gguf::TensorInfo& t, int64_t rows, int64_t cols, Op op, int64_t r0 = 0, int64_t n = -1);
  Tensor f32_weight(const gguf::TensorInfo& t, int64_t rows, int64_t cols);  // decoded to F32, WeightUse::Vector

  const gguf::File& f_;
  Backend& b_;
  std::vector<Tensor> loaded_;                        // device copies to release
  std::vector<std::unique_ptr<float[]>> converted_;   // host f32 copies of 1-D tensors
};

// Typed, range-checked reads of `{arch}.<suffix>` hyperparameters. Every value that later code
// sizes allocations or loops from goes through one of these, so a hostile file cannot ask for
// absurd sizes; errors name the key, its value and the allowed range.
class HParams {
 public:
  HParams(const gguf::File& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }
  int64_t count(const std::string& suffix, int64_t lo, int64_t hi) const;  // required integer
  int64_t count_or(const std::string& suffix, int64_t fallback, int64_t lo, int64_t hi) const;
  float real(const std::string& suffix) const;
  float real_or(const std::string& suffix, float fallback) const;
  bool flag_or(const std::string& suffix, bool fallback) const;
  bool has(const std::string& suffix) const { return f_.has(key(suffix)); }

 private:
  int64_t checked(const std::string& k, int64_t v, int64_t lo, int64_t hi) const;
  const gguf::File& f_;
  std::string arch_;
};

// Limits for hyperparameters (far above any real embedding model, far below overflow).
constexpr int64_t kMaxLayers = 512;
constexpr int64_t kMaxModelDim = 1 << 16;
constexpr int64_t kMaxHeads = 1 << 10;
constexpr int64_t kMaxContext = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 22;

}  // namespace embed

// The Backend interface: memory and coarse op-level kernels, each taking one args struct.
// cpu/ and cuda/ implement it; model code reaches it only through engine/ops.h front-doors,
// which check shapes and dtypes once. No CUDA or SIMD header may be included here.
//
// Conventions for every op:
// - Tensors are 2-D row-major views (engine/tensor.h); shapes are written outer -> inner.
// - Activations are F32. Index arrays (ids, positions, cu_seqlens) are I32 in device memory;
//   ops that need them on the host for scheduling also get a host copy.
// - "may alias" says when an output may be the same memory as an input.
// - Ops are asynchronous with respect to the host on devices that can be; sync() waits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "engine/tensor.h"

namespace embed {

enum class Op {
  Gather, Matmul, LayerNorm, RmsNorm, Rope, Attention, Activation, Glu, Add, Scale, Pool, Softmax,
};
const char* op_name(Op op);

enum class Activation { GeluErf, GeluTanh, Silu, Tanh, Relu };
// How a weight will be used, so a backend can lay it out for that use once, at load.
enum class WeightUse { Matmul, Gather, Vector };
enum class RopeMode { Norm, Neox };  // Norm rotates (2i, 2i+1); Neox rotates (i, i + n_rot/2)
enum class PoolKind { Mean, First, Last };

// Functions the CUDA kernels call as well (compiled for the device by nvcc).
#if defined(__CUDACC__)
#define EMBED_HOST_DEVICE __host__ __device__
#else
#define EMBED_HOST_DEVICE
#endif

// Relative-position buckets (T5, MPNet): the row of a bias table that a key at offset r = j - i
// from its query (key positions) reads. Keys at or before the query use rows [0, half), keys
// after it rows [half, 2 half); a distance n = |r| below `exact` is its own bucket, a longer one
// the log-spaced bucket exact + b of the last b with n >= far_start[b]. Built by
// relative_buckets(), which holds the models' formula; kernels only compare integers, so every
// backend puts a distance in the same bucket.
struct RelativeBuckets {
  static constexpr int kMaxFar = 64;
  int half = 0, exact = 0;
  int32_t far_start[kMaxFar] = {};
  EMBED_HOST_DEVICE int operator()(int r) const {
    const int n = r < 0 ? -r : r;
    int b = n;
    if (n >= exact) {
      b = exact;
      for (int k = 1; k < half - exact && n >= far_start[k]; k++) b = exact + k;
    }
    return (r > 0 ? half : 0) + b;
  }
};
// HF transformers' bidirectional relative_position_bucket (T5Attention._relative_position_bucket,
// MPNet's relative_position_bucket: the same formula) for n_buckets in both directions (even,
// 4..256) and max_distance, with its float arithmetic; throws Error(Format) otherwise.
RelativeBuckets relative_buckets(int n_buckets, int max_distance);

// ALiBi's slope of head h of n_heads (Press et al. 2022; jina-bert-v2, llama.cpp's
// ggml_soft_max_ext with max_bias): P = the largest power of two <= n_heads; head h < P gets
// 2^(-max_bias (h + 1) / P), the others the odd powers of 2^(-max_bias / (2 P)) in order.
EMBED_HOST_DEVICE inline float alibi_slope(int h, int n_heads, float max_bias) {
  int p = 1;
  while (p * 2 <= n_heads) p *= 2;
  const double e = h < p ? static_cast<double>(h + 1) : (2.0 * (h - p) + 1.0) / 2.0;
  return static_cast<float>(exp2(-static_cast<double>(max_bias) * e / p));
}

// out[t, :] (+)= scale * table[ids[t], :] decoded to f32.
struct GatherArgs {
  Tensor table;                    // [n_vocab, d_model] F32/F16/BF16/Q8_0/Q4_K/... rows
  const int32_t* ids = nullptr;    // [n_tokens] device; every id already checked < n_vocab
  int64_t n_tokens = 0;
  Tensor out;                      // [n_tokens, d_model] F32
  float scale = 1.0f;
  bool accumulate = false;         // add into out instead of overwriting (position embeddings)
};

// y[m, n] (+)= act(x[m, k] . w[n, k]^T + bias[n])
struct MatmulArgs {
  Tensor x;                        // [m, k] F32
  Tensor w;                        // [n, k] any weight dtype; rows contiguous along k
  Tensor bias;                     // [1, n] F32, or empty
  Tensor y;                        // [m, n] F32; must not alias x
  bool accumulate = false;         // y += result: fuses the residual add
  // Applied to every output after the bias (never with accumulate): the MLP's activation, fused
  // into the GEMM's epilogue where a kernel can, run as the activation op right after elsewhere
  // (the same values either way).
  std::optional<Activation> activation;
};

// y = (x - mean) / sqrt(var + eps) * weight + bias, per row.
struct LayerNormArgs {
  Tensor x;                        // [rows, cols] F32
  Tensor weight;                   // [1, cols] F32
  Tensor bias;                     // [1, cols] F32, or empty
  Tensor y;                        // [rows, cols] F32; may alias x
  float eps = 1e-12f;
};

// y = x / sqrt(mean(x^2) + eps) * weight, per row (rows may be heads: [n_tokens*n_heads, d_head]).
struct RmsNormArgs {
  Tensor x;                        // [rows, cols] F32
  Tensor weight;                   // [1, cols] F32
  Tensor y;                        // [rows, cols] F32; may alias x
  float eps = 1e-6f;
};

// In-place rotary embedding of the first n_rot dims of every head.
struct RopeArgs {
  Tensor x;                        // [n_tokens, n_heads * d_head] F32, rotated in place
  const int32_t* positions = nullptr;  // [n_tokens] device
  int n_heads = 0;
  int d_head = 0;
  int n_rot = 0;                   // even, <= d_head
  RopeMode mode = RopeMode::Neox;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;         // linear scaling: position * freq_scale
};

// Keys and values that start before the queries (a KV cache: a long sequence run in pieces keeps
// the keys and values of its earlier pieces). Off while cu_seqlens_host is null. When on, k and v
// hold sequence s's keys in their rows [cu[s], cu[s+1]) (len_kv of them), which end with the keys
// of its current tokens: query i of s (0-based in the current piece, len_q of them) sits at key
// position len_kv - len_q + i, and the causal mask and the windows compare these positions.
struct AttentionKvRows {
  const int32_t* cu_seqlens = nullptr;       // [n_seqs + 1] device
  const int32_t* cu_seqlens_host = nullptr;  // the same, on the host
  int max_seqlen = 0;                        // longest len_kv
  bool on() const { return cu_seqlens_host != nullptr; }
};

// Scaled dot-product attention over packed sequences: token t of sequence s attends only to
// tokens of s, subject to the causal flag and the window. Query i sees key j iff
// (!causal || j <= i) && (window_left < 0 || i - j <= window_left) && (window_right < 0 || j - i <= window_right),
// with i and j positions in the sequence (with kv_rows: key positions, see AttentionKvRows).
// Optional features are members that are off by default; a kernel treats each one whole.
struct AttentionArgs {
  Tensor q;                        // [n_tokens, n_heads * d_head] F32
  Tensor k;                        // [n_tokens, n_kv_heads * d_head] F32 ([n_kv_tokens, ...] with kv_rows)
  Tensor v;                        // [n_tokens, n_kv_heads * d_head] F32 (likewise)
  Tensor out;                      // [n_tokens, n_heads * d_head] F32; must not alias q/k/v
  const int32_t* cu_seqlens = nullptr;       // [n_seqs + 1] device: sequence s is [cu[s], cu[s+1])
  const int32_t* cu_seqlens_host = nullptr;  // the same, on the host
  int n_seqs = 0;
  int max_seqlen = 0;
  int n_heads = 0;
  int n_kv_heads = 0;              // n_heads % n_kv_heads == 0 (grouped-query)
  int d_head = 0;
  float scale = 1.0f;              // applied to q.k before the softmax
  bool causal = false;
  int window_left = -1;            // -1: unlimited
  int window_right = -1;
  AttentionKvRows kv_rows;         // keys of earlier positions (off: k, v rows are q's tokens)
  // KV-Embedding prefix (arXiv 2601.01046): when prefix_k is set, every query of sequence s may
  // also attend to one extra key/value, row s of prefix_k / prefix_v, seen by all queries
  // whatever the mask or window, with prefix_bias added to its logit after the scale.
  Tensor prefix_k;                 // [n_seqs, n_kv_heads * d_head] F32, or empty (no prefix)
  Tensor prefix_v;                 // [n_seqs, n_kv_heads * d_head] F32
  float prefix_bias = 0.0f;
  // An additive position bias on every logit, after the scale, for query i and key j (key
  // positions) of head h: table[buckets(j - i), h] - alibi_slope(h, n_heads, alibi_max_bias) |j - i|.
  // T5 and MPNet read the bucket table, jina-bert-v2 (ALiBi) the slopes. Off when both are.
  Tensor bias_table;               // [n_buckets, n_heads] F32 (row = bucket), or empty
  RelativeBuckets bias_buckets;    // with bias_table
  float alibi_max_bias = 0.0f;     // > 0: ALiBi slopes
  bool position_bias() const { return !bias_table.empty() || alibi_max_bias > 0.0f; }
  // The bias of head h for key offset r = j - i (host code; bias_table in host memory).
  float position_bias_at(int h, int r) const {
    float b = 0.0f;
    if (!bias_table.empty()) b = bias_table.ptr<const float>()[static_cast<int64_t>(bias_buckets(r)) * bias_table.cols + h];
    if (alibi_max_bias > 0.0f) b -= alibi_slope(h, n_heads, alibi_max_bias) * static_cast<float>(r < 0 ? -r : r);
    return b;
  }
};

// y = act(x), elementwise.
struct ActivationArgs {
  Tensor x;                        // [rows, cols] F32
  Tensor y;                        // same shape; may alias x
  Activation act = Activation::GeluErf;
};

// y = act(gate) * up, elementwise (SwiGLU with Silu, GeGLU with Gelu*).
struct GluArgs {
  Tensor gate;                     // [rows, cols] F32
  Tensor up;                       // [rows, cols] F32
  Tensor y;                        // [rows, cols] F32; may alias gate or up
  Activation act = Activation::Silu;
};

// y = a + b, elementwise; b may also be a single row broadcast over a's rows.
struct AddArgs {
  Tensor a;                        // [rows, cols] F32
  Tensor b;                        // [rows, cols] or [1, cols] F32
  Tensor y;                        // [rows, cols] F32; may alias a or b
};

// y = x * factor.
struct ScaleArgs {
  Tensor x;
  Tensor y;                        // may alias x
  float factor = 1.0f;
};

// One row per sequence: mean over its tokens (weighted if token_weights), or its first/last token.
struct PoolArgs {
  Tensor x;                        // [n_tokens, d] F32
  const int32_t* cu_seqlens = nullptr;       // [n_seqs + 1] device
  const int32_t* cu_seqlens_host = nullptr;  // host copy
  int n_seqs = 0;
  PoolKind kind = PoolKind::Mean;
  const float* token_weights = nullptr;  // [n_tokens] device, Mean only; null = all 1. A
                                         // sequence whose weights sum to 0 pools to zeros.
  Tensor y;                        // [n_seqs, d] F32
};

// Row-wise softmax (numerically stable), in place allowed.
struct SoftmaxArgs {
  Tensor x;                        // [rows, cols] F32
  Tensor y;                        // may alias x
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  // Which kernels run the ops: the CPU's level (scalar, avx2, avx512, amx), or the device's name.
  virtual std::string kernel_level() const { return device_name(device()); }

  // ---- memory ----
  virtual void* alloc(size_t bytes) = 0;        // throws Error(OutOfMemory)
  virtual void free(void* p) = 0;               // free(nullptr) does nothing
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;    // host -> backend
  virtual void download(void* dst, const void* src, size_t bytes) = 0;  // backend -> host (syncs)
  // backend -> backend, not overlapping (the KV cache moves the rows it keeps). The default goes
  // through the host; backends override it with a direct copy.
  virtual void copy(void* dst, const void* src, size_t bytes);
  virtual void sync() = 0;
  // Makes a weight usable by kernels: the CPU returns the host view itself (zero copy from the
  // mmap), plus matmul panels in Tensor::packed for unquantized matmul weights; a device backend
  // copies it (and may convert its layout once).
  virtual Tensor load_weight(const Tensor& host, WeightUse use) = 0;
  virtual void release_weight(const Tensor& t) = 0;

  // ---- capability ----
  // Whether `op` accepts `dtype` for its weight/table operand (activations are always F32).
  virtual bool supports(Op op, DType dtype) const = 0;

  // ---- kernels ----
  virtual void gather(const GatherArgs& a) = 0;
  virtual void matmul(const MatmulArgs& a) = 0;
  virtual void layer_norm(const LayerNormArgs& a) = 0;
  virtual void rms_norm(const RmsNormArgs& a) = 0;
  virtual void rope(const RopeArgs& a) = 0;
  virtual void attention(const AttentionArgs& a) = 0;
  virtual void activation(const ActivationArgs& a) = 0;
  virtual void glu(const GluArgs& a) = 0;
  virtual void add(const AddArgs& a) = 0;
  virtual void scale(const ScaleArgs& a) = 0;
  virtual void pool(const PoolArgs& a) = 0;
  virtual void softmax(const SoftmaxArgs& a) = 0;
};

// Owning device buffer (RAII over Backend::alloc/free).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend* b, size_t bytes) : backend_(b), bytes_(bytes), ptr_(bytes ? b->alloc(bytes) : nullptr) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      bytes_ = o.bytes_;
      ptr_ = o.ptr_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr_) backend_->free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// The CPU kernel levels (cpu/isa.h chooses one per backend). Auto: the best this CPU and OS allow,
// or the level named by the EMBED_ISA environment variable (scalar, avx2, avx512, amx).
enum class CpuIsa { Auto, Scalar, Avx2, Avx512, Amx };
const char* cpu_isa_name(CpuIsa isa);

// The arithmetic of matmuls and attention (CTranslate2's name for the same idea).
// F32: f32-grade results on every ISA (on AMX: operands split into bf16 parts, see docs/kernels.md).
// BF16: one bf16 product per pair, f32 accumulation (faster, a little further from the model).
// Int8: 8-bit integer products for quantized weights with activations quantized per block, as
// llama.cpp computes them (other weights as F32).
// On CUDA: F32 computes everything in f32 (every weight widened to f32 at load); BF16 runs the
// matmuls and attention on the tensor cores with 16-bit inputs (bf16 weights as bf16, f16 and
// quantized ones as f16) and f32 accumulation; Int8 is refused (docs/cuda.md).
enum class ComputeType { F32, BF16, Int8 };
const char* compute_type_name(ComputeType t);

struct BackendOptions {
  Device device = Device::Cpu;
  int threads = 0;           // CPU: worker threads, 0 = hardware concurrency
  CpuIsa cpu_isa = CpuIsa::Auto;  // CPU: kernel level (tests and benchmarks force one)
  ComputeType compute_type = ComputeType::F32;
  int cuda_device = 0;
  // CPU: round activations the way llama.cpp's CPU backend does (8-bit blocks into quantized
  // matmuls, f16/bf16 into 16-bit ones, GELU from an f16 table; cpu/llama_cpp_rounding.h), for
  // vectors that match ones made with llama.cpp. Off: activations stay f32, closer to the model.
  bool llama_cpp_rounding = false;
};

// engine/backend_registry.cpp: the only place that knows which backends were compiled in.
std::unique_ptr<Backend> create_backend(const BackendOptions& options);
// The CPU kernel level a CPU backend made now would use (EMBED_ISA included); throws like it.
CpuIsa resolve_cpu_isa(CpuIsa requested = CpuIsa::Auto);
bool backend_available(Device d, std::string* why_not = nullptr);

}  // namespace embed

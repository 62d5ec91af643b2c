// --compat llama.cpp as a wrapper around the CPU backend: matmul inputs are rounded the way
// llama.cpp's CPU backend rounds them and GELUs come from its f16 table (llama_cpp_rounding.h);
// every other call goes to the wrapped backend unchanged, so no kernel knows about this mode. The
// wrapped backend multiplies exactly: in f32 (the AVX-512 level where the CPU has AMX), or in
// integers with compute type int8, which quantizes block-quantized matmuls' inputs itself.
#include <memory>

#include "base/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/isa.h"
#include "cpu/llama_cpp_rounding.h"

namespace embed::cpu {
namespace {

bool is_gelu(Activation act) { return act == Activation::GeluErf || act == Activation::GeluTanh; }

class LlamaCppRoundingBackend final : public Backend {
 public:
  LlamaCppRoundingBackend(std::unique_ptr<CpuBackend> inner, bool int8) : inner_(std::move(inner)), int8_(int8) {}
  ~LlamaCppRoundingBackend() override { rounded_.reset(); }  // freed through inner_, which must still exist

  Device device() const override { return inner_->device(); }
  std::string name() const override { return inner_->name() + " with llama.cpp rounding"; }
  std::string kernel_level() const override { return inner_->kernel_level(); }
  void* alloc(size_t bytes) override { return inner_->alloc(bytes); }
  void free(void* p) override { inner_->free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { inner_->upload(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { inner_->download(dst, src, bytes); }
  void sync() override { inner_->sync(); }
  Tensor load_weight(const Tensor& host, WeightUse use) override { return inner_->load_weight(host, use); }
  void release_weight(const Tensor& t) override { inner_->release_weight(t); }
  bool supports(Op op, DType dtype) const override { return inner_->supports(op, dtype); }

  void gather(const GatherArgs& a) override { inner_->gather(a); }
  void layer_norm(const LayerNormArgs& a) override { inner_->layer_norm(a); }
  void rms_norm(const RmsNormArgs& a) override { inner_->rms_norm(a); }
  void rope(const RopeArgs& a) override { inner_->rope(a); }
  void attention(const AttentionArgs& a) override { inner_->attention(a); }
  void add(const AddArgs& a) override { inner_->add(a); }
  void scale(const ScaleArgs& a) override { inner_->scale(a); }
  void pool(const PoolArgs& a) override { inner_->pool(a); }
  void softmax(const SoftmaxArgs& a) override { inner_->softmax(a); }

  void matmul(const MatmulArgs& in) override {
    MatmulArgs a = in;
    a.activation.reset();  // this backend's own activation (the GELU table) runs after
    rounded_matmul(a);
    if (in.activation) activation(ActivationArgs{in.y, in.y, *in.activation});
  }

  void rounded_matmul(MatmulArgs a) {
    // Compute type int8 quantizes the activations of block-quantized matmuls itself, the same way.
    const bool inner_quantizes = int8_ && dtype_is_quantized(a.w.dtype);
    if (!llama_cpp_rounds_activations(a.w.dtype) || inner_quantizes) return inner_->matmul(a);
    if (a.x.bytes() > rounded_.bytes()) rounded_ = DeviceBuffer(inner_.get(), a.x.bytes());
    const int64_t k = a.x.cols;
    const float* x = a.x.ptr<const float>();
    float* r = static_cast<float*>(rounded_.data());
    inner_->threads().parallel_for(a.x.rows, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; i++) llama_cpp_round_activations(a.w.dtype, x + i * k, k, r + i * k);
    });
    a.x.data = r;
    inner_->matmul(a);
  }

  void activation(const ActivationArgs& a) override {
    if (!is_gelu(a.act)) return inner_->activation(a);
    const float* x = a.x.ptr<const float>();
    float* y = a.y.ptr<float>();
    inner_->threads().parallel_for(a.x.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) y[i] = llama_cpp_gelu(x[i]);
    });
  }

  void glu(const GluArgs& a) override {
    if (!is_gelu(a.act)) return inner_->glu(a);
    const float* g = a.gate.ptr<const float>();
    const float* u = a.up.ptr<const float>();
    float* y = a.y.ptr<float>();
    inner_->threads().parallel_for(a.gate.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) y[i] = llama_cpp_gelu(g[i]) * u[i];
    });
  }

 private:
  std::unique_ptr<CpuBackend> inner_;
  bool int8_;  // the inner backend computes in int8 (AMX)
  DeviceBuffer rounded_;  // matmul inputs rounded the llama.cpp way (grown as needed, reused)
};

}  // namespace

std::unique_ptr<Backend> create_cpu_backend(const BackendOptions& options) {
  if (!options.llama_cpp_rounding) return std::make_unique<CpuBackend>(options);
  // llama.cpp multiplies its rounded activations exactly (integer or f32 dot products), so the
  // wrapped kernels must too: f32 products at the AVX-512 level at most (never the split-bf16
  // tiles), or compute type int8, whose integer products are llama.cpp's own.
  if (options.compute_type == ComputeType::BF16)
    fail(ErrorKind::InvalidArgument, "llama.cpp rounding (--compat llama.cpp) cannot be combined with compute type bf16");
  BackendOptions inner = options;
  const bool int8 = options.compute_type == ComputeType::Int8;
  if (!int8 && resolve_isa(options.cpu_isa) == CpuIsa::Amx) inner.cpu_isa = CpuIsa::Avx512;
  return std::make_unique<LlamaCppRoundingBackend>(std::make_unique<CpuBackend>(inner), int8);
}

}  // namespace embed::cpu

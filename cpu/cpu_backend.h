// The CPU implementation of Backend: host memory, a thread pool, and per-op kernels that use
// AVX2/FMA/F16C when the CPU has them (AVX-512 for the GEMM tiles when it has that too) and the
// scalar reference (cpu/ref/) otherwise.
#pragma once

#include <memory>

#include <mutex>

#include "cpu/packed_weight.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace embed::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  Device device() const override { return Device::Cpu; }
  std::string name() const override;

  void* alloc(size_t bytes) override;
  void free(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void sync() override {}
  Tensor load_weight(const Tensor& host, WeightUse use) override;
  void release_weight(const Tensor& t) override;

  bool supports(Op op, DType dtype) const override;

  void gather(const GatherArgs& a) override;
  void matmul(const MatmulArgs& a) override;
  void layer_norm(const LayerNormArgs& a) override;
  void rms_norm(const RmsNormArgs& a) override;
  void rope(const RopeArgs& a) override;
  void attention(const AttentionArgs& a) override;
  void activation(const ActivationArgs& a) override;
  void glu(const GluArgs& a) override;
  void add(const AddArgs& a) override;
  void scale(const ScaleArgs& a) override;
  void pool(const PoolArgs& a) override;
  void softmax(const SoftmaxArgs& a) override;

  bool fast() const { return fast_; }
  ThreadPool& threads() { return *pool_; }

 private:
  bool fast_;    // AVX2/FMA/F16C kernels
  bool avx512_;  // AVX-512 matmul (packed weights) and attention on top
  bool llama_cpp_rounding_;  // BackendOptions::llama_cpp_rounding
  std::unique_ptr<ThreadPool> pool_;
  std::mutex packed_mutex_;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
  // Matmul inputs rounded the llama.cpp way (grown as needed, reused across calls). Last member:
  // freed (through this backend's free) before anything else is torn down.
  DeviceBuffer rounded_;
};

}  // namespace embed::cpu

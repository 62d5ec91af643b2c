// The CPU implementation of Backend: host memory, a thread pool, and the kernels of one level
// (scalar reference, AVX2, AVX-512, AMX; cpu/kernels.h KernelTable) chosen once at construction.
#pragma once

#include <memory>

#include <mutex>

#include "cpu/kernels.h"
#include "cpu/packed_weight.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace embed::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  Device device() const override { return Device::Cpu; }
  std::string name() const override;
  std::string kernel_level() const override { return cpu_isa_name(k_.isa); }

  void* alloc(size_t bytes) override;
  void free(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void sync() override {}
  Tensor load_weight(const Tensor& host, WeightUse use) override;
  void release_weight(const Tensor& t) override;

  bool supports(Op op, DType dtype) const override;

  void gather(const GatherArgs& a) override { k_.gather(a, *pool_); }
  void matmul(const MatmulArgs& a) override;
  void layer_norm(const LayerNormArgs& a) override { k_.layer_norm(a, *pool_); }
  void rms_norm(const RmsNormArgs& a) override { k_.rms_norm(a, *pool_); }
  void rope(const RopeArgs& a) override { k_.rope(a, *pool_); }
  void attention(const AttentionArgs& a) override { k_.attention(a, *pool_); }
  void activation(const ActivationArgs& a) override { k_.activation(a, *pool_); }
  void glu(const GluArgs& a) override { k_.glu(a, *pool_); }
  void add(const AddArgs& a) override { k_.add(a, *pool_); }
  void scale(const ScaleArgs& a) override { k_.scale(a, *pool_); }
  void pool(const PoolArgs& a) override { k_.pool(a, *pool_); }
  void softmax(const SoftmaxArgs& a) override { k_.softmax(a, *pool_); }

  CpuIsa isa() const { return k_.isa; }
  ThreadPool& threads() { return *pool_; }

 private:
  const KernelTable& k_;  // chosen once: kernel_table(resolve_isa(...), compute type)
  std::unique_ptr<ThreadPool> pool_;
  std::mutex packed_mutex_;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
};

// The CPU backend, wrapped in llama.cpp's activation rounding when the options ask for it.
std::unique_ptr<Backend> create_cpu_backend(const BackendOptions& options);

}  // namespace embed::cpu

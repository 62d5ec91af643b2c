// CpuBackend: host memory, the thread pool, and the choice between the AVX2 kernels and the
// scalar references, made once at construction from the CPU's features.
#include "cpu/cpu_backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "cpu/cpu_features.h"
#include "cpu/kernels.h"
#include "cpu/ref/ref.h"
#include "engine/error.h"

namespace embed::cpu {

CpuBackend::CpuBackend(const BackendOptions& options)
    : fast_(!options.force_scalar && cpu_features().has_fast_path()),
      avx512_(fast_ && !options.cpu_no_avx512 && cpu_features().has_avx512()) {
  static bool warned = false;
  if (!fast_ && !options.force_scalar && !warned) {
    warned = true;
    std::fprintf(stderr, "embed: warning: this CPU lacks AVX2/FMA/F16C (%s): using the scalar kernels, which are much slower\n",
                 cpu_features().describe().c_str());
  }
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool_ = std::make_unique<ThreadPool>(threads);
}

std::string CpuBackend::name() const {
 return std::string("cpu (") + (avx512_ ? "avx512" : fast_ ? "avx2" : "scalar") + ", " + std::to_string(pool_->size()) + " threads)";
}

void* CpuBackend::alloc(size_t bytes) {
  // 64-byte alignment: cache lines, and any vector load width.
  void* p = std::aligned_alloc(64, (bytes + 63) & ~size_t{63});
  if (!p) fail(ErrorKind::OutOfMemory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  return p;
}

void CpuBackend::free(void* p) { std::free(p); }
void CpuBackend::upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

Tensor CpuBackend::load_weight(const Tensor& host, WeightUse use) {
  Tensor t = host;  // zero copy: kernels read the mapping
  // Unquantized matmul weights also get panels for the AVX2 GEMM (same bytes, new order).
  if (fast_ && use == WeightUse::Matmul && packable(host.dtype)) {
    auto p = std::make_unique<PackedWeight>(pack_weight(host));
    t.packed = p.get();
    std::lock_guard<std::mutex> lock(packed_mutex_);
    packed_.push_back(std::move(p));
  }
  return t;
}

void CpuBackend::release_weight(const Tensor& t) {
  if (!t.packed) return;
  std::lock_guard<std::mutex> lock(packed_mutex_);
  for (auto it = packed_.begin(); it != packed_.end(); ++it)
    if (it->get() == t.packed) {
      packed_.erase(it);
      return;
    }
}

bool CpuBackend::supports(Op op, DType dtype) const {
  switch (op) {
    case Op::Gather:
    case Op::Matmul:
      return dtype != DType::I32;  // every float and quantized weight type decodes row by row
    default:
      return dtype == DType::F32;
  }
}

void CpuBackend::gather(const GatherArgs& a) { fast_ ? avx2::gather(a, *pool_) : ref::gather(a); }
void CpuBackend::matmul(const MatmulArgs& a) {
  if (avx512_ && a.w.packed) return avx512::matmul_packed(a, *static_cast<const PackedWeight*>(a.w.packed), *pool_);
  if (avx512_) return avx2::matmul_decoded(a, *pool_, avx512::run_panels);
  fast_ ? avx2::matmul(a, *pool_) : ref::matmul(a);
}
void CpuBackend::layer_norm(const LayerNormArgs& a) { fast_ ? avx2::layer_norm(a, *pool_) : ref::layer_norm(a); }
void CpuBackend::rms_norm(const RmsNormArgs& a) { fast_ ? avx2::rms_norm(a, *pool_) : ref::rms_norm(a); }
void CpuBackend::rope(const RopeArgs& a) { rope_fast(a, *pool_); }
void CpuBackend::attention(const AttentionArgs& a) {
  if (avx512_) return avx512::attention(a, *pool_);
  fast_ ? avx2::attention(a, *pool_) : ref::attention(a);
}
void CpuBackend::activation(const ActivationArgs& a) { fast_ ? avx2::activation(a, *pool_) : ref::activation(a); }
void CpuBackend::glu(const GluArgs& a) { fast_ ? avx2::glu(a, *pool_) : ref::glu(a); }
void CpuBackend::add(const AddArgs& a) { fast_ ? avx2::add(a, *pool_) : ref::add(a); }
void CpuBackend::scale(const ScaleArgs& a) { fast_ ? avx2::scale(a, *pool_) : ref::scale(a); }
void CpuBackend::pool(const PoolArgs& a) { fast_ ? avx2::pool_rows(a, *pool_) : ref::pool(a); }
void CpuBackend::softmax(const SoftmaxArgs& a) { fast_ ? avx2::softmax(a, *pool_) : ref::softmax(a); }
void CpuBackend::normalize(const NormalizeArgs& a) { normalize_rows(a, *pool_); }

}  // namespace embed::cpu

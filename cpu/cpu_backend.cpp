// CpuBackend: host memory, the thread pool, and the choice between the AVX2 kernels and the
// scalar references, made once at construction from the CPU's features.
#include "cpu/cpu_backend.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "cpu/cpu_features.h"
#include "cpu/kernels.h"
#include "cpu/llama_cpp_rounding.h"
#include "cpu/ref/ref.h"
#include "base/error.h"

namespace embed::cpu {

CpuBackend::CpuBackend(const BackendOptions& options)
    : fast_(!options.force_scalar && cpu_features().has_fast_path()),
      avx512_(fast_ && !options.cpu_no_avx512 && cpu_features().has_avx512()),
      llama_cpp_rounding_(options.llama_cpp_rounding) {
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

// Buffers start 64 bytes into their allocation (cache lines, any vector load width); the 64-byte
// header records how the block was obtained. Large buffers (the activation workspace) are mapped
// directly, so freeing one returns its pages to the OS at once instead of leaving them in the
// malloc heap, where a grown-and-released workspace would keep counting in the resident size.
namespace {
constexpr size_t kHeader = 64;
constexpr size_t kMapFrom = size_t{1} << 20;
struct BlockHeader {
  size_t mapped_bytes;  // 0: from aligned_alloc
};
}  // namespace

void* CpuBackend::alloc(size_t bytes) {
  const size_t total = ((bytes + 63) & ~size_t{63}) + kHeader;
  void* block = nullptr;
  size_t mapped = 0;
  if (total >= kMapFrom) {
    block = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) block = nullptr;
    mapped = total;
  } else {
    block = std::aligned_alloc(64, total);
  }
  if (!block) fail(ErrorKind::OutOfMemory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  static_cast<BlockHeader*>(block)->mapped_bytes = mapped;
  return static_cast<char*>(block) + kHeader;
}

void CpuBackend::free(void* p) {
  if (!p) return;
  void* block = static_cast<char*>(p) - kHeader;
  const size_t mapped = static_cast<BlockHeader*>(block)->mapped_bytes;
  if (mapped) munmap(block, mapped);
  else std::free(block);
}
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
void CpuBackend::matmul(const MatmulArgs& in) {
  MatmulArgs a = in;
  if (llama_cpp_rounding_ && llama_cpp_rounds_activations(a.w.dtype)) {
    if (a.x.bytes() > rounded_.bytes()) rounded_ = DeviceBuffer(this, a.x.bytes());
    const int64_t k = a.x.cols;
    const float* x = a.x.ptr<const float>();
    float* r = static_cast<float*>(rounded_.data());
    const DType w = a.w.dtype;
    pool_->parallel_for(a.x.rows, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; i++) llama_cpp_round_activations(w, x + i * k, k, r + i * k);
    });
    a.x.data = r;
  }
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
namespace {
bool is_gelu(Activation act) { return act == Activation::GeluErf || act == Activation::GeluTanh; }
}  // namespace

void CpuBackend::activation(const ActivationArgs& a) {
  if (llama_cpp_rounding_ && is_gelu(a.act)) {
    const float* x = a.x.ptr<const float>();
    float* y = a.y.ptr<float>();
    pool_->parallel_for(a.x.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) y[i] = llama_cpp_gelu(x[i]);
    });
    return;
  }
  fast_ ? avx2::activation(a, *pool_) : ref::activation(a);
}
void CpuBackend::glu(const GluArgs& a) {
  if (llama_cpp_rounding_ && is_gelu(a.act)) {
    const float* g = a.gate.ptr<const float>();
    const float* u = a.up.ptr<const float>();
    float* y = a.y.ptr<float>();
    pool_->parallel_for(a.gate.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) y[i] = llama_cpp_gelu(g[i]) * u[i];
    });
    return;
  }
  fast_ ? avx2::glu(a, *pool_) : ref::glu(a);
}
void CpuBackend::add(const AddArgs& a) { fast_ ? avx2::add(a, *pool_) : ref::add(a); }
void CpuBackend::scale(const ScaleArgs& a) { fast_ ? avx2::scale(a, *pool_) : ref::scale(a); }
void CpuBackend::pool(const PoolArgs& a) { fast_ ? avx2::pool_rows(a, *pool_) : ref::pool(a); }
void CpuBackend::softmax(const SoftmaxArgs& a) { fast_ ? avx2::softmax(a, *pool_) : ref::softmax(a); }

}  // namespace embed::cpu

// CpuBackend: host memory, the thread pool, weight packing, and the kernel level chosen once at
// construction (cpu/isa.h); every op goes straight to that level's kernel table.
#include "cpu/cpu_backend.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "cpu/isa.h"
#include "cpu/kernels.h"
#include "base/error.h"

namespace embed::cpu {

CpuBackend::CpuBackend(const BackendOptions& options)
    : k_(kernel_table(resolve_isa(options.cpu_isa), options.compute_type)) {
  static bool warned = false;
  if (k_.isa == CpuIsa::Scalar && options.cpu_isa == CpuIsa::Auto && !std::getenv("EMBED_ISA") && !warned) {
    warned = true;
    std::fprintf(stderr, "embed: warning: this CPU lacks AVX2/FMA/F16C (%s): using the scalar kernels, which are much slower\n",
                 cpu_features().describe().c_str());
  }
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool_ = std::make_unique<ThreadPool>(threads);
}

std::string CpuBackend::name() const {
  std::string s = std::string("cpu (") + cpu_isa_name(k_.isa);
  if (k_.compute != ComputeType::F32) s += std::string(", compute ") + compute_type_name(k_.compute);
  return s + ", " + std::to_string(pool_->size()) + " threads)";
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
  // Matmul weights also get this level's GEMM layout (same values, new order).
  if (use == WeightUse::Matmul) {
    if (std::unique_ptr<PackedWeight> p = k_.pack_matmul_weight(host)) {
      t.packed = p.get();
      std::lock_guard<std::mutex> lock(packed_mutex_);
      packed_.push_back(std::move(p));
    }
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

void CpuBackend::matmul(const MatmulArgs& a) {
  if (!a.activation || k_.matmul_fuses_activation) return k_.matmul(a, *pool_);
  MatmulArgs plain = a;
  plain.activation.reset();
  k_.matmul(plain, *pool_);
  k_.activation(ActivationArgs{a.y, a.y, *a.activation}, *pool_);
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

}  // namespace embed::cpu

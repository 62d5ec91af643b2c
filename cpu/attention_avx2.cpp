// Attention over packed sequences with AVX2, as two small GEMMs per tile of up to 6 queries:
// S = Q . K^T with the keys transposed once per task into kT[d_head][len], then an exact softmax
// per query over its visible range (causal / window limits give a contiguous range; entries
// outside it become 0), then O = P . V with V read in place. Both products use the register-tile
// micro-kernel of the matmul. One task = (sequence, kv head[, block of 32 queries]), so the work
// for a query depends only on its own sequence: outputs are batch invariant (extra zero terms
// added for the other queries of a tile leave a float sum unchanged). The algorithm is in
// attention_impl.h, shared with the AVX-512 file.
#include "cpu/attention_impl.h"
#include "cpu/gemm_kernel_avx2.h"

namespace embed::cpu::avx2 {
namespace {

struct Tile {
  static constexpr int kNR = avx2::kNR;
  static void run(int mr, int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                  int n_valid) {
    kKernels<LoadF32>[mr](kc, a, lda, b, ldb, c, ldc, n_valid);
  }
};

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) { attention_detail::attention<Tile>(a, pool); }

}  // namespace embed::cpu::avx2

// Attention with the AVX-512 GEMM tile (32 columns); the algorithm is attention_impl.h's, the
// same as the AVX2 file's, and gives bit-identical outputs.
#include "cpu/attention_impl.h"
#include "cpu/gemm_kernel_avx512.h"

namespace embed::cpu::avx512 {
namespace {

struct Tile {
  static constexpr int kNR = avx512::kNR;
  // b holds kNR columns per row; the second half is read only when it is valid (a head of 16
  // values must not read past its row).
  static void run(int mr, int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                  int n_valid) {
    kKernels<LoadF32>[mr](kc, a, lda, b, n_valid > 16 ? b + 16 : b, ldb, c, ldc, n_valid);
  }
};

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) { attention_detail::attention<Tile>(a, pool); }

}  // namespace embed::cpu::avx512

// Embedding normalization and Matryoshka truncation (portable; one row per pooled vector, cheap).
#include "cpu/kernels.h"
#include "cpu/ref/ref.h"

namespace embed::cpu {

void normalize_rows(const NormalizeArgs& a, ThreadPool& pool) {
  // The reference is already the right algorithm (double accumulation); split rows over threads.
  pool.parallel_for(a.x.rows, 16, [&](int64_t r0, int64_t r1) {
    NormalizeArgs part = a;
    part.x = a.x.slice_rows(r0, r1 - r0);
    part.y = a.y.slice_rows(r0, r1 - r0);
    ref::normalize(part);
  });
}

}  // namespace embed::cpu

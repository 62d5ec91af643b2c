// pool on every backend vs cpu/ref (double). Mean pooling sums len rows:
// |err| <= (len + 2) eps mean|x|; first/last copy rows exactly.
#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("pool mean (plain and weighted), first and last match the reference", "[kernels][pool]") {
  const std::vector<int32_t> cu = {0, 1, 8, 8 + 13, 8 + 13 + 40};
  const int64_t n = cu.back(), d = 389;
  std::vector<float> x = random_floats(4, static_cast<size_t>(n * d), -2, 2);
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; t++) w[t] = (t % 5 == 0) ? 0.0f : 1.0f;  // e.g. special tokens left out
  w[0] = 0.0f;  // sequence 0 (one token) has total weight 0 -> zeros
  for (PoolKind kind : {PoolKind::Mean, PoolKind::First, PoolKind::Last})
    for (bool weighted : {false, true}) {
      if (weighted && kind != PoolKind::Mean) continue;
      std::vector<float> want(static_cast<size_t>(4 * d));
      PoolArgs ra;
      ra.x = host_tensor(x, n, d);
      ra.cu_seqlens = cu.data();
      ra.cu_seqlens_host = cu.data();
      ra.n_seqs = 4;
      ra.kind = kind;
      ra.token_weights = weighted ? w.data() : nullptr;
      ra.y = host_tensor(want, 4, d);
      cpu::ref::pool(ra);
      for (auto& bt : backends_under_test()) {
        DeviceArena arena(*bt.backend);
        PoolArgs a = ra;
        a.x = arena.upload(ra.x);
        a.cu_seqlens = arena.upload_ints(cu);
        if (weighted) a.token_weights = arena.upload_floats(w);
        a.y = arena.poisoned(DType::F32, 4, d);
        bt.backend->pool(a);
        expect_close(arena.download(a.y), want, kind == PoolKind::Mean ? 42 * kF32Eps * 2 : 0, 0,
                     bt.name + " pool " + std::to_string(static_cast<int>(kind)) + (weighted ? " weighted" : ""), d);
      }
    }
}

// pool and normalize on every backend vs cpu/ref (double). Mean pooling sums len rows:
// |err| <= (len + 2) eps mean|x|; first/last copy rows exactly. Normalization divides by a norm
// accumulated in double in the reference: |err| <= 4 eps |y| (+ the p-norm's pow error, 16 eps).
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

TEST_CASE("normalize matches llama.cpp's embd_normalize definitions, after truncation", "[kernels][normalize]") {
  const int64_t rows = 5, cols = 384;
  std::vector<float> x = random_floats(6, static_cast<size_t>(rows * cols), -3, 3);
  std::fill(x.begin() + 2 * cols, x.begin() + 3 * cols, 0.0f);  // a zero row stays zero
  for (int p : {-1, 0, 1, 2, 3, 6})
    for (int dims : {384, 128, 1}) {
      std::vector<float> want(static_cast<size_t>(rows * dims));
      NormalizeArgs ra;
      ra.x = host_tensor(x, rows, cols);
      ra.y = host_tensor(want, rows, dims);
      ra.dims = dims;
      ra.p = p;
      cpu::ref::normalize(ra);
      for (auto& bt : backends_under_test()) {
        DeviceArena arena(*bt.backend);
        NormalizeArgs a = ra;
        a.x = arena.upload(ra.x);
        a.y = arena.poisoned(DType::F32, rows, dims);
        bt.backend->normalize(a);
        expect_close(arena.download(a.y), want, 1e-30, 16 * kF32Eps,
                     bt.name + " normalize p=" + std::to_string(p) + " dims=" + std::to_string(dims), dims);
      }
    }
}

TEST_CASE("normalize reference equals hand-computed values", "[kernels][normalize]") {
  // x = (3, -4): L2 -> (0.6, -0.8); L1 -> (3/7, -4/7); max-abs -> x * 32760 / 4; p=3 -> x / (27+64)^(1/3).
  std::vector<float> x = {3.0f, -4.0f};
  auto run = [&](int p) {
    std::vector<float> y(2);
    NormalizeArgs a;
    a.x = host_tensor(x, 1, 2);
    a.y = host_tensor(y, 1, 2);
    a.dims = 2;
    a.p = p;
    cpu::ref::normalize(a);
    return y;
  };
  CHECK(run(2) == std::vector<float>{0.6f, -0.8f});
  CHECK(run(1) == std::vector<float>{3.0f / 7.0f, -4.0f / 7.0f});
  CHECK(run(0) == std::vector<float>{24570.0f, -32760.0f});
  CHECK(run(-1) == std::vector<float>{3.0f, -4.0f});
  const float c = static_cast<float>(std::cbrt(91.0));
  CHECK(run(3)[0] == Approx(3.0f / c).epsilon(1e-6));
}

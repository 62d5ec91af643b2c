// Compute type bf16 attention on AVX512-BF16 (cpu/attention_bf16_avx512.cpp) against its scalar
// reference of the same rounding and order (cpu::ref::attention_bf16_pairs): packed varlen
// batches with tails (lengths 1, odd, past a 32-key block and a 32-query task block), causal,
// sliding windows, grouped-query heads, a KV-Embedding prefix and cached keys (kv_rows). Its
// distance to exact maths is bounded by tests/kernels/attention_test.cpp (the harness's
// cpu-avx512-bf16 backend, bf16 product bound).
//
// The two agree bit for bit on the scores (same bf16 operands, same pair order); they part only
// where the kernel's f32 softmax (exp_ps, about 1 ulp, its argument fl(s * scale - max) by one
// FMA) and the reference's double one give a p on either side of a bf16 rounding midpoint. Bound,
// per output o = sum_j p^_j v^_j / sum_j p_j (|v^| <= 1):
//   - p before rounding: relative error delta <= (4 + scale * d) eps (exp_ps 2 eps, the FMA's
//     rounding eps |logit| with |logit| <= scale * d, the subtraction's eps |logit - max| whose
//     weight p |logit - max| <= 1 / e, 1 eps);
//   - p rounded to bf16: the two roundings differ by at most one bf16 step, <= 2^-7 p;
//   - the sums: the kernel's f32 softmax sum (len + 2) eps relative, the two P . V chains len eps
//     each, the prefix's f32 FMA 2 eps;
// so |kernel - reference| <= 2^-7 + 2 delta + (3 len + 8) eps. A systematic mistake (a dropped
// pair, a wrong key grid) moves many outputs by far more than a rare midpoint case: the mean
// squared error must also stay below 1e-10 of the signal. (Measured on a Zen 4 when written: max
// |kernel - reference| 1.2e-7, NMSE below 6e-15 in every case: the division by the sum, f32 in
// the kernel, double in the reference.)
#include <cmath>

#include "cpu/cpu_backend.h"
#include "cpu/kernels.h"
#include "cpu/ref/ref.h"
#include "gguf/fp16.h"
#include "tests/cpuinfo_flags.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

namespace {

struct Bf16Case {
  std::vector<int32_t> lens;
  int n_heads, n_kv_heads, d_head;
  bool causal;
  int window_left, window_right;
  bool prefix = false;
  int cached = 0;  // keys of earlier positions before each sequence's queries (kv_rows)
};

void run(const Bf16Case& c, uint32_t seed, Backend& b) {
  std::vector<int32_t> cu{0}, cu_kv{0};
  for (int32_t l : c.lens) {
    cu.push_back(cu.back() + l);
    cu_kv.push_back(cu_kv.back() + l + c.cached);
  }
  const int64_t n = cu.back(), nk = cu_kv.back();
  const int64_t qc = int64_t{c.n_heads} * c.d_head, kc = int64_t{c.n_kv_heads} * c.d_head;
  std::vector<float> q = random_floats(seed, static_cast<size_t>(n * qc));
  std::vector<float> k = random_floats(seed + 1, static_cast<size_t>(nk * kc));
  std::vector<float> v = random_floats(seed + 2, static_cast<size_t>(nk * kc));
  std::vector<float> pk = random_floats(seed + 3, c.lens.size() * static_cast<size_t>(kc));
  std::vector<float> pv = random_floats(seed + 4, c.lens.size() * static_cast<size_t>(kc));
  std::vector<float> want(static_cast<size_t>(n * qc)), got(static_cast<size_t>(n * qc), NAN);
  AttentionArgs a;
  a.q = host_tensor(q, n, qc);
  a.k = host_tensor(k, nk, kc);
  a.v = host_tensor(v, nk, kc);
  a.out = host_tensor(want, n, qc);
  a.cu_seqlens = cu.data();
  a.cu_seqlens_host = cu.data();
  a.n_seqs = static_cast<int>(c.lens.size());
  a.max_seqlen = *std::max_element(c.lens.begin(), c.lens.end());
  if (c.cached > 0) {
    a.kv_rows.cu_seqlens = cu_kv.data();
    a.kv_rows.cu_seqlens_host = cu_kv.data();
    a.kv_rows.max_seqlen = a.max_seqlen + c.cached;
  }
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.d_head = c.d_head;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head));
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  if (c.prefix) {
    a.prefix_k = host_tensor(pk, static_cast<int64_t>(c.lens.size()), kc);
    a.prefix_v = host_tensor(pv, static_cast<int64_t>(c.lens.size()), kc);
    a.prefix_bias = 0.5f;
  }
  cpu::ref::attention_bf16_pairs(a);
  a.out = host_tensor(got, n, qc);
  b.attention(a);
  const double eps = kF32Eps, len = a.max_seqlen + c.cached + (c.prefix ? 1 : 0);
  const double delta = (4 + a.scale * c.d_head) * eps;
  const double atol = std::ldexp(1.0, -7) + 2 * delta + (3 * len + 8) * eps;
  INFO("bf16 attention heads " << c.n_heads << "/" << c.n_kv_heads << " d_head " << c.d_head << (c.causal ? " causal" : "")
                               << " window " << c.window_left << "/" << c.window_right << (c.prefix ? " prefix" : "")
                               << " cached " << c.cached);
  expect_close(got, want, atol, 0, "bf16 attention vs ref::attention_bf16_pairs", qc);
  const Mismatch mm = compare(got, want);
  INFO("NMSE " << mm.nmse);
  CHECK(mm.nmse <= 1e-10);
}

}  // namespace

TEST_CASE("bf16 attention matches its same-order reference", "[kernels][attention][bf16]") {
  if (!(cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_bf16"))) {
    WARN("no AVX512-BF16 on this CPU: the bf16 attention was not run (its refusal is checked by matmul_bf16_test)");
    return;
  }
  BackendOptions o;
  o.threads = 2;
  o.cpu_isa = CpuIsa::Avx512;
  o.compute_type = ComputeType::BF16;
  auto b = cpu::create_cpu_backend(o);
  const std::vector<Bf16Case> cases = {
      {{1}, 1, 1, 32, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, true, -1, -1},
      {{31, 7, 40}, 8, 2, 32, true, -1, -1},   // GQA 4:1
      {{33, 1, 17}, 4, 1, 128, false, -1, -1}, // MQA, 33 keys: a second 32-key block of one key
      {{70, 9}, 2, 2, 64, true, 15, -1},       // causal sliding window (odd first visible keys)
      {{70, 9}, 2, 1, 64, false, 8, 8},        // symmetric window
      {{130, 3}, 4, 1, 256, true, 63, -1},     // Gemma-like head size
      {{200}, 2, 2, 32, false, -1, -1},        // several 32-query task blocks
      {{21, 40}, 4, 2, 64, false, -1, -1, true},      // KV-Embedding prefix
      {{3, 12}, 4, 2, 64, true, -1, -1, false, 37},   // cached keys, odd count
  };
  uint32_t seed = 7100;
  for (const Bf16Case& c : cases) run(c, seed += 10, *b);
}

TEST_CASE("bf16 attention reference: scores and outputs are vdpbf16ps pair chains", "[kernels][attention][bf16]") {
  // One query, two keys, d = 2, scale 1. q = (1, 2^-8 * 3) rounds to (1, 2^-8 * 3) (exact in bf16);
  // k0 = (1, 0), k1 = (0, 1): scores 1 and 3 * 2^-8, softmax weights e^0 = 1 and e^(3/256 - 1).
  std::vector<float> q = {1.0f, 3.0f / 256}, k = {1.0f, 0.0f, 0.0f, 1.0f};
  // v: key 0 = (1 + 2^-9, 1) rounds to (1, 1) (a quarter of a bf16 step at 1); key 1 = (0, -1).
  std::vector<float> v = {1.0f + 1.0f / 512, 1.0f, 0.0f, -1.0f}, out(2);
  std::vector<int32_t> cu = {0, 1}, cu_kv = {0, 2};
  AttentionArgs a;
  a.q = host_tensor(q, 1, 2);
  a.k = host_tensor(k, 2, 2);
  a.v = host_tensor(v, 2, 2);
  a.out = host_tensor(out, 1, 2);
  a.cu_seqlens = a.cu_seqlens_host = cu.data();
  a.kv_rows.cu_seqlens = a.kv_rows.cu_seqlens_host = cu_kv.data();
  a.kv_rows.max_seqlen = 2;
  a.n_seqs = 1;
  a.max_seqlen = 1;
  a.n_heads = a.n_kv_heads = 1;
  a.d_head = 2;
  a.scale = 1.0f;
  cpu::ref::attention_bf16_pairs(a);
  const double w1 = std::exp(3.0 / 256 - 1.0);  // key 1's weight
  const float w1_bf16 = bf16_to_f32(f32_to_bf16(static_cast<float>(w1)));
  // Output column 0: 1 * 1 + w1^ * 0; column 1: 1 * 1 + w1^ * (-1); each over 1 + w1.
  CHECK(out[0] == static_cast<float>(1.0 / (1.0 + w1)));
  CHECK(out[1] == static_cast<float>(static_cast<double>(1.0f - w1_bf16) / (1.0 + w1)));
}

// The tensor-core attention of the CUDA backend's default mode against cpu/ref, on the GPU (label
// cuda) and under the CPU emulator (label kernels). The oracle runs on the inputs rounded as the
// kernel rounds them (f16, after the power-of-two shift when a tensor exceeds the f16 range), so
// what remains is the f32 part, as in tests/kernels/attention_test.cpp (2 d^2 eps scale max|q|
// max|k| + (len + 8) eps max|v|), plus the f16 rounding of the probabilities: relative 2^-11 each
// (absolute 2^-25 below the f16 normal range), and they sum to at least 1 before the division,
// so (2^-11 + len 2^-25) max|v|.
#include <algorithm>
#include <cmath>

#include "cpu/ref/ref.h"
#include "gguf/fp16.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

namespace {

struct Case {
  std::vector<int32_t> lens;
  int n_heads, n_kv_heads, d_head;
  bool causal;
  int window_left, window_right;
};

// x as the kernel sees it: f16(x * 2^-s) * 2^s, with s the batch-wide shift of cuda/device.cuh.
std::vector<float> as_rounded(const std::vector<float>& x) {
  float mx = 0;
  for (float v : x) mx = std::max(mx, std::fabs(v));
  int s = 0;
  if (mx > 65504.0f) std::frexp(mx, &s), s -= 15;
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); i++) out[i] = std::ldexp(f16_to_f32(f32_to_f16(std::ldexp(x[i], -s))), s);
  return out;
}

double max_abs(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

void run_case(Backend& b, const Case& c, uint32_t seed, float big_v) {
  std::vector<int32_t> cu{0};
  for (int32_t l : c.lens) cu.push_back(cu.back() + l);
  const int64_t n = cu.back(), qc = int64_t{c.n_heads} * c.d_head, kc = int64_t{c.n_kv_heads} * c.d_head;
  std::vector<float> q = random_floats(seed, n * qc), k = random_floats(seed + 1, n * kc), v = random_floats(seed + 2, n * kc);
  if (big_v != 0) v[static_cast<size_t>(n * kc / 3)] = big_v;  // forces the shift of v
  std::vector<float> qr = as_rounded(q), kr = as_rounded(k), vr = as_rounded(v), want(n * qc);
  AttentionArgs a;
  a.q = host_tensor(qr, n, qc);
  a.k = host_tensor(kr, n, kc);
  a.v = host_tensor(vr, n, kc);
  a.out = host_tensor(want, n, qc);
  a.cu_seqlens = a.cu_seqlens_host = cu.data();
  a.n_seqs = static_cast<int>(c.lens.size());
  a.max_seqlen = *std::max_element(c.lens.begin(), c.lens.end());
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.d_head = c.d_head;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head));
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  cpu::ref::attention(a);

  DeviceArena arena(b);
  AttentionArgs g = a;
  g.q = arena.upload(host_tensor(q, n, qc));
  g.k = arena.upload(host_tensor(k, n, kc));
  g.v = arena.upload(host_tensor(v, n, kc));
  g.out = arena.poisoned(DType::F32, n, qc);
  g.cu_seqlens = arena.upload_ints(cu);
  b.attention(g);
  const double d = c.d_head, len = a.max_seqlen, mv = max_abs(vr);
  const double atol = 2 * d * d * kF32Eps * a.scale * max_abs(qr) * max_abs(kr) + (len + 8) * kF32Eps * mv +
                      (std::ldexp(1.0, -11) + len * std::ldexp(1.0, -25)) * mv;
  expect_close(arena.download(g.out), want, atol, 0,
               "tensor-core attention heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " d_head " +
                   std::to_string(c.d_head) + (c.causal ? " causal" : " bidirectional") + " window " +
                   std::to_string(c.window_left) + "/" + std::to_string(c.window_right),
               qc);
}

}  // namespace

TEST_CASE("tensor-core attention matches the reference on f16-rounded inputs", "[cuda][attention]") {
  auto b = tensor_core_backend();
  if (!b) return;
  const std::vector<Case> cases = {
      {{1}, 1, 1, 16, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, true, -1, -1},
      {{31, 7, 70}, 8, 2, 32, true, -1, -1},     // GQA 4:1, two query tiles
      {{33, 1, 17}, 4, 1, 128, false, -1, -1},   // MQA
      {{70, 9}, 2, 2, 64, true, 15, -1},         // causal sliding window
      {{70, 9}, 2, 1, 64, false, 8, 8},          // symmetric window
      {{130, 3}, 4, 1, 256, true, 63, -1},       // Gemma-like head size: 32-key tiles, two output chunks
      {{200}, 2, 2, 16, false, -1, -1},          // several query and key tiles
  };
  uint32_t seed = 500;
  for (const Case& c : cases) run_case(*b, c, seed += 10, 0.0f);
  run_case(*b, {{40, 9}, 2, 1, 64, false, -1, -1}, 900, 1.0e5f);  // v beyond the f16 range: shifted, not inf
}

TEST_CASE("tensor-core attention output of a sequence does not depend on its neighbours", "[cuda][attention][invariance]") {
  auto b = tensor_core_backend();
  if (!b) return;
  const int h = 4, kvh = 2, dh = 64, len = 70;
  const int64_t qc = h * dh, kc = kvh * dh, n = 150;
  const std::vector<float> q = random_floats(31, n * qc), k = random_floats(32, n * kc), v = random_floats(33, n * kc);
  auto run = [&](const std::vector<int32_t>& cu, int64_t first_row, int64_t rows) {
    DeviceArena arena(*b);
    std::vector<float> qs(q.begin() + first_row * qc, q.begin() + (first_row + rows) * qc);
    std::vector<float> ks(k.begin() + first_row * kc, k.begin() + (first_row + rows) * kc);
    std::vector<float> vs(v.begin() + first_row * kc, v.begin() + (first_row + rows) * kc);
    AttentionArgs a;
    a.q = arena.upload(host_tensor(qs, rows, qc));
    a.k = arena.upload(host_tensor(ks, rows, kc));
    a.v = arena.upload(host_tensor(vs, rows, kc));
    a.out = arena.poisoned(DType::F32, rows, qc);
    a.cu_seqlens = arena.upload_ints(cu);
    a.cu_seqlens_host = cu.data();
    a.n_seqs = static_cast<int>(cu.size()) - 1;
    a.max_seqlen = 80;
    a.n_heads = h;
    a.n_kv_heads = kvh;
    a.d_head = dh;
    a.scale = 0.125f;
    a.causal = true;
    b->attention(a);
    return arena.download(a.out);
  };
  // Rows 0..149 packed as [0,80) | [80,150); the second sequence (70 rows) alone is rows 80..149.
  const std::vector<float> packed = run({0, 80, 150}, 0, 150), alone = run({0, len}, 80, len);
  CHECK(std::memcmp(packed.data() + 80 * qc, alone.data(), alone.size() * 4) == 0);
}

TEST_CASE("tensor-core attention after cached keys gives its one-pass rows", "[cuda][attention][kv]") {
  // One causal sequence of 300 positions with a 100-key window: one pass over all of it, and its
  // last 45 queries after keys [128, 300) only (AttentionArgs::kv_rows, the KV cache's trimmed
  // rows): the key tiles start at the same positions, so the rows are bit-identical.
  auto b = tensor_core_backend();
  if (!b) return;
  for (int dh : {64, 256}) {
    const int h = 4, kvh = 2, full = 300, first = 128, nq = 45;
    const int64_t qc = int64_t{h} * dh, kc = int64_t{kvh} * dh;
    std::vector<float> q = random_floats(41, full * qc), k = random_floats(42, full * kc), v = random_floats(43, full * kc);
    DeviceArena arena(*b);
    AttentionArgs a;
    a.n_seqs = 1;
    a.n_heads = h;
    a.n_kv_heads = kvh;
    a.d_head = dh;
    a.scale = 0.125f;
    a.causal = true;
    a.window_left = 100;
    const std::vector<int32_t> cu_full{0, full}, cu_q{0, nq}, cu_kv{0, full - first};
    AttentionArgs f = a;
    f.q = arena.upload(host_tensor(q, full, qc));
    f.k = arena.upload(host_tensor(k, full, kc));
    f.v = arena.upload(host_tensor(v, full, kc));
    f.out = arena.poisoned(DType::F32, full, qc);
    f.cu_seqlens = arena.upload_ints(cu_full);
    f.cu_seqlens_host = cu_full.data();
    f.max_seqlen = full;
    b->attention(f);
    const std::vector<float> one_pass = arena.download(f.out);
    std::vector<float> qs(q.end() - nq * qc, q.end()), ks(k.begin() + first * kc, k.end()), vs(v.begin() + first * kc, v.end());
    AttentionArgs c = a;
    c.q = arena.upload(host_tensor(qs, nq, qc));
    c.k = arena.upload(host_tensor(ks, full - first, kc));
    c.v = arena.upload(host_tensor(vs, full - first, kc));
    c.out = arena.poisoned(DType::F32, nq, qc);
    c.cu_seqlens = arena.upload_ints(cu_q);
    c.cu_seqlens_host = cu_q.data();
    c.max_seqlen = nq;
    c.kv_rows.cu_seqlens = arena.upload_ints(cu_kv);
    c.kv_rows.cu_seqlens_host = cu_kv.data();
    c.kv_rows.max_seqlen = full - first;
    b->attention(c);
    const std::vector<float> got = arena.download(c.out);
    INFO("d_head " << dh);
    CHECK(std::memcmp(got.data(), one_pass.data() + (full - nq) * qc, got.size() * 4) == 0);
  }
}

// attention on every backend vs cpu/ref (double): packed variable-length sequences (lengths 1,
// primes, long), bidirectional and causal, grouped-query, sliding windows (one-sided and
// symmetric), d_head 16..256. Tolerance from the maths: a score s = scale * q.k has an f32 error
// <= d eps scale sum|q k| <= d eps scale d (inputs in [-1,1]); softmax turns a score error e into
// a relative probability error of about 2e, and the output is a convex mix of v rows (|v| <= 1),
// so |err| <= 2 d^2 eps scale + (len + 8) eps. The KV-Embedding prefix (one more key and value per
// sequence, with a logit bias) is one more term of the same sums; the reference's prefix is
// checked against the same sequence with the prefix inserted as its first token, and by hand.
#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

namespace {

struct Case {
  std::vector<int32_t> lens;
  int n_heads, n_kv_heads, d_head;
  bool causal;
  int window_left, window_right;
  bool prefix = false;  // a KV-Embedding prefix key/value per sequence
  float prefix_bias = 0.0f;
};

// offset: q, k, v and out start this many floats into their buffers (production passes row-offset
// views, whose rows are not cache-line aligned).
void run_case(const Case& c, uint32_t seed, int64_t offset = 0) {
  std::vector<int32_t> cu{0};
  for (int32_t l : c.lens) cu.push_back(cu.back() + l);
  const int64_t n = cu.back();
  const int64_t qc = int64_t{c.n_heads} * c.d_head, kc = int64_t{c.n_kv_heads} * c.d_head;
  std::vector<float> q = random_floats(seed, static_cast<size_t>(n * qc));
  std::vector<float> k = random_floats(seed + 1, static_cast<size_t>(n * kc));
  std::vector<float> v = random_floats(seed + 2, static_cast<size_t>(n * kc));
  std::vector<float> want(static_cast<size_t>(n * qc));
  AttentionArgs ra;
  ra.q = host_tensor(q, n, qc);
  ra.k = host_tensor(k, n, kc);
  ra.v = host_tensor(v, n, kc);
  ra.out = host_tensor(want, n, qc);
  ra.cu_seqlens = cu.data();
  ra.cu_seqlens_host = cu.data();
  ra.n_seqs = static_cast<int>(c.lens.size());
  ra.max_seqlen = *std::max_element(c.lens.begin(), c.lens.end());
  ra.n_heads = c.n_heads;
  ra.n_kv_heads = c.n_kv_heads;
  ra.d_head = c.d_head;
  ra.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head));
  ra.causal = c.causal;
  ra.window_left = c.window_left;
  ra.window_right = c.window_right;
  std::vector<float> pk, pv;
  if (c.prefix) {
    pk = random_floats(seed + 3, c.lens.size() * static_cast<size_t>(kc));
    pv = random_floats(seed + 4, c.lens.size() * static_cast<size_t>(kc));
    ra.prefix_k = host_tensor(pk, static_cast<int64_t>(c.lens.size()), kc);
    ra.prefix_v = host_tensor(pv, static_cast<int64_t>(c.lens.size()), kc);
    ra.prefix_bias = c.prefix_bias;
  }
  cpu::ref::attention(ra);
  const double d = c.d_head;
  for (auto& bt : backends_under_test()) {
    // A score s = scale * q.k is a sum of d products with sum |q k| <= d (inputs in [-1, 1]): its
    // error is scale * product_sum_tolerance(d, d); softmax turns a score error e into a relative
    // probability error of about 2e, moving the output (a convex mix of v rows, |v| <= 1) by 2e;
    // P . V then adds its own sum of len products with sum p |v| <= sum p, divided by sum p.
    const double atol = 2 * ra.scale * product_sum_tolerance(bt, c.d_head, d) +
                        product_sum_tolerance(bt, ra.max_seqlen + (c.prefix ? 1 : 0), 1.0) + 8 * kF32Eps;
    DeviceArena arena(*bt.backend);
    AttentionArgs a = ra;
    a.q = arena.upload_offset(ra.q, offset);
    a.k = arena.upload_offset(ra.k, offset);
    a.v = arena.upload_offset(ra.v, offset);
    a.out = arena.poisoned_offset(DType::F32, n, qc, offset);
    a.cu_seqlens = arena.upload_ints(cu);
    if (c.prefix) {
      a.prefix_k = arena.upload(ra.prefix_k);
      a.prefix_v = arena.upload(ra.prefix_v);
    }
    bt.backend->attention(a);
    std::string what = bt.name + (c.prefix ? " prefix bias " + std::to_string(c.prefix_bias) : std::string()) + " attention heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) +
                       " d_head " + std::to_string(c.d_head) + (c.causal ? " causal" : " bidirectional") + " window " +
                       std::to_string(c.window_left) + "/" + std::to_string(c.window_right);
    const std::vector<float> got = arena.download(a.out);
    expect_close(got, want, atol, 0, what, qc);
    // The worst-case bound grows with d^2: a systematic error well inside it (1e-4 at head size
    // 256) must still fail, by the mean squared error.
    const Mismatch mm = compare(got, want);
    INFO(what << ": NMSE " << mm.nmse << " (ceiling " << bt.nmse_ceiling << ")");
    CHECK(mm.nmse <= bt.nmse_ceiling);
  }
}

}  // namespace

TEST_CASE("attention matches the reference on packed varlen batches", "[kernels][attention]") {
  const std::vector<Case> cases = {
      {{1}, 1, 1, 16, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, false, -1, -1},
      {{5, 1, 13, 2}, 4, 4, 64, true, -1, -1},
      {{31, 7, 40}, 8, 2, 32, true, -1, -1},      // GQA 4:1
      {{33, 1, 17}, 4, 1, 128, false, -1, -1},    // MQA
      {{70, 9}, 2, 2, 64, true, 15, -1},          // causal sliding window
      {{70, 9}, 2, 1, 64, false, 8, 8},           // symmetric window (bidirectional)
      {{130, 3}, 4, 1, 256, true, 63, -1},        // Gemma-like head size
      {{200}, 2, 2, 16, false, -1, -1},           // longer than one query block
  };
  uint32_t seed = 11;
  for (const Case& c : cases) run_case(c, seed += 10);
}

TEST_CASE("attention reads and writes rows at any offset", "[kernels][attention]") {
  // Views that start 1, 3 and 5 floats into a buffer (not on a cache line or a vector boundary).
  const Case c{{21, 40}, 4, 2, 64, true, -1, -1};
  for (int64_t offset : {1, 3, 5}) run_case(c, 900 + static_cast<uint32_t>(offset), offset);
}

TEST_CASE("attention output of a sequence does not depend on its neighbours", "[kernels][attention][invariance]") {
  // The same 11-token sequence alone and packed between two others: bit-identical output.
  const int h = 4, kvh = 2, dh = 32, len = 11;
  const int64_t qc = h * dh, kc = kvh * dh;
  std::vector<float> q = random_floats(1, static_cast<size_t>(40 * qc)), k = random_floats(2, static_cast<size_t>(40 * kc)),
                     v = random_floats(3, static_cast<size_t>(40 * kc));
  for (auto& bt : backends_under_test()) {
    for (bool causal : {false, true}) {
      auto run = [&](const std::vector<int32_t>& cu, int64_t n, int64_t first) {
        DeviceArena arena(*bt.backend);
        AttentionArgs a;
        std::vector<float> qs(q.begin(), q.begin() + n * qc), ks(k.begin(), k.begin() + n * kc), vs(v.begin(), v.begin() + n * kc);
        a.q = arena.upload(host_tensor(qs, n, qc));
        a.k = arena.upload(host_tensor(ks, n, kc));
        a.v = arena.upload(host_tensor(vs, n, kc));
        a.out = arena.poisoned(DType::F32, n, qc);
        a.cu_seqlens = arena.upload_ints(cu);
        a.cu_seqlens_host = cu.data();
        a.n_seqs = static_cast<int>(cu.size()) - 1;
        a.max_seqlen = 40;
        a.n_heads = h;
        a.n_kv_heads = kvh;
        a.d_head = dh;
        a.scale = 0.17f;
        a.causal = causal;
        bt.backend->attention(a);
        std::vector<float> out = arena.download(a.out);
        return std::vector<float>(out.begin() + first * qc, out.begin() + (first + len) * qc);
      };
      // Packed: [0,20) | [20,31) | [31,40). The middle sequence's q/k/v rows are rows 20..30.
      const auto packed = run({0, 20, 31, 40}, 40, 20);
      // Alone: shift rows 20..30 to the front.
      std::rotate(q.begin(), q.begin() + 20 * qc, q.end());
      std::rotate(k.begin(), k.begin() + 20 * kc, k.end());
      std::rotate(v.begin(), v.begin() + 20 * kc, v.end());
      const auto alone = run({0, len}, len, 0);
      std::rotate(q.begin(), q.end() - 20 * qc, q.end());
      std::rotate(k.begin(), k.end() - 20 * kc, k.end());
      std::rotate(v.begin(), v.end() - 20 * kc, v.end());
      INFO(bt.name << (causal ? " causal" : " bidirectional"));
      CHECK(std::memcmp(packed.data(), alone.data(), packed.size() * 4) == 0);
    }
  }
}

TEST_CASE("attention with a KV-Embedding prefix matches the reference on packed varlen batches", "[kernels][attention][kv]") {
  const std::vector<Case> cases = {
      {{1}, 1, 1, 16, true, -1, -1, true, 1.0f},
      {{5, 1, 13, 2}, 4, 4, 64, true, -1, -1, true, 1.0f},
      {{5, 1, 13, 2}, 4, 4, 64, false, -1, -1, true, -0.5f},
      {{31, 7, 40}, 8, 2, 32, true, -1, -1, true, 2.0f},   // GQA 4:1
      {{70, 9}, 2, 2, 64, true, 15, -1, true, 1.0f},       // sliding window: the prefix stays visible
      {{130, 3}, 4, 1, 256, true, 63, -1, true, 0.5f},     // Gemma-like head size
      {{200, 17}, 2, 2, 16, true, -1, -1, true, 3.0f},     // longer than one query block
      {{9, 12}, 2, 1, 48, true, -1, -1, true, 1.0f},       // AMX: 48 is not a multiple of 32 (AVX-512 path)
      {{9, 12}, 2, 1, 24, true, -1, -1, true, 1.0f},       // not a multiple of 16: the scalar path
  };
  uint32_t seed = 311;
  for (const Case& c : cases) run_case(c, seed += 10);
}

TEST_CASE("reference prefix: the same as the prefix inserted as each sequence's first token", "[kernels][attention][kv]") {
  // With bias 0, a prefix position is one more key every query sees: causal attention over
  // [prefix, tokens...] gives the tokens' rows. Three sequences with different prefixes: a row
  // that read a neighbour's prefix would differ.
  const std::vector<int32_t> lens = {4, 1, 7};
  const int h = 2, kvh = 1, dh = 8;
  std::vector<int32_t> cu{0}, cu_ins{0};
  for (int32_t l : lens) cu.push_back(cu.back() + l), cu_ins.push_back(cu_ins.back() + l + 1);
  const int64_t n = cu.back(), n_ins = cu_ins.back(), qc = h * dh, kc = kvh * dh;
  std::vector<float> q = random_floats(5, static_cast<size_t>(n * qc)), k = random_floats(6, static_cast<size_t>(n * kc)),
                     v = random_floats(7, static_cast<size_t>(n * kc)), pk = random_floats(8, lens.size() * kc),
                     pv = random_floats(9, lens.size() * kc);
  std::vector<float> qi, ki, vi;  // inserted: each sequence's prefix row, then its tokens (a zero query)
  for (size_t s = 0; s < lens.size(); s++) {
    qi.insert(qi.end(), qc, 0.0f);
    ki.insert(ki.end(), pk.begin() + s * kc, pk.begin() + (s + 1) * kc);
    vi.insert(vi.end(), pv.begin() + s * kc, pv.begin() + (s + 1) * kc);
    qi.insert(qi.end(), q.begin() + cu[s] * qc, q.begin() + cu[s + 1] * qc);
    ki.insert(ki.end(), k.begin() + cu[s] * kc, k.begin() + cu[s + 1] * kc);
    vi.insert(vi.end(), v.begin() + cu[s] * kc, v.begin() + cu[s + 1] * kc);
  }
  std::vector<float> got(static_cast<size_t>(n * qc)), want(static_cast<size_t>(n_ins * qc));
  AttentionArgs a;
  a.n_seqs = static_cast<int>(lens.size());
  a.max_seqlen = 8;
  a.n_heads = h;
  a.n_kv_heads = kvh;
  a.d_head = dh;
  a.scale = 0.4f;
  a.causal = true;
  AttentionArgs b = a;
  a.q = host_tensor(q, n, qc), a.k = host_tensor(k, n, kc), a.v = host_tensor(v, n, kc), a.out = host_tensor(got, n, qc);
  a.cu_seqlens = a.cu_seqlens_host = cu.data();
  a.prefix_k = host_tensor(pk, 3, kc), a.prefix_v = host_tensor(pv, 3, kc);
  b.q = host_tensor(qi, n_ins, qc), b.k = host_tensor(ki, n_ins, kc), b.v = host_tensor(vi, n_ins, kc), b.out = host_tensor(want, n_ins, qc);
  b.cu_seqlens = b.cu_seqlens_host = cu_ins.data();
  cpu::ref::attention(a);
  cpu::ref::attention(b);
  for (size_t s = 0; s < lens.size(); s++)
    for (int64_t i = 0; i < lens[s]; i++)
      for (int64_t c = 0; c < qc; c++) {
        INFO("sequence " << s << " token " << i << " col " << c);
        REQUIRE(got[(cu[s] + i) * qc + c] == Approx(want[(cu_ins[s] + 1 + i) * qc + c]).margin(1e-6));
      }
}

TEST_CASE("reference prefix bias by hand: a zero query weighs the prefix e^b against 1 per key", "[kernels][attention][kv]") {
  // q = 0: every key's logit is 0 and the prefix's is b, so out = (e^b v_p + sum_j v_j) / (e^b + n).
  const int dh = 4, len = 3;
  const float bias = 1.5f;
  std::vector<float> q(len * dh, 0.0f), k = random_floats(1, len * dh), v = {1, 0, 0, 2, 0, 1, 0, 2, 0, 0, 1, 2};
  std::vector<float> pk = {0.3f, -0.2f, 0.9f, 0.1f}, pv = {4, 4, 4, -8}, out(len * dh);
  std::vector<int32_t> cu = {0, len};
  AttentionArgs a;
  a.q = host_tensor(q, len, dh), a.k = host_tensor(k, len, dh), a.v = host_tensor(v, len, dh), a.out = host_tensor(out, len, dh);
  a.cu_seqlens = a.cu_seqlens_host = cu.data();
  a.n_seqs = 1, a.max_seqlen = len, a.n_heads = 1, a.n_kv_heads = 1, a.d_head = dh, a.scale = 0.5f;
  a.prefix_k = host_tensor(pk, 1, dh), a.prefix_v = host_tensor(pv, 1, dh), a.prefix_bias = bias;
  cpu::ref::attention(a);  // bidirectional: every query sees all 3 keys
  const double w = std::exp(1.5);
  const double want[4] = {(4 * w + 1) / (w + 3), (4 * w + 1) / (w + 3), (4 * w + 1) / (w + 3), (-8 * w + 6) / (w + 3)};
  for (int i = 0; i < len; i++)
    for (int c = 0; c < dh; c++) CHECK(out[i * dh + c] == Approx(want[c]).epsilon(1e-6));
}

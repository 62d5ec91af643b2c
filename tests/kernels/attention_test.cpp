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

namespace {

// Keys of earlier positions (AttentionArgs::kv_rows): sequence s has kv_lens[s] keys starting at
// position first[s] of a longer sequence, and its queries are the last q_lens[s] positions.
struct KvCase {
  std::vector<int32_t> q_lens, kv_lens, first;
  int n_heads, n_kv_heads, d_head;
  bool causal;
  int window_left;
  bool prefix = false;  // a KV-Embedding prefix key/value per sequence as well
  float prefix_bias = 0.0f;
};

struct KvInputs {
  std::vector<int32_t> cu_q{0}, cu_kv{0}, cu_full{0};
  std::vector<float> q_full, k_full, v_full;  // every position of each sequence from 0
  std::vector<float> q, k, v;                 // queries of the pieces; the keys they attend to
  int max_full = 0;
};

KvInputs make_kv_inputs(const KvCase& c, uint32_t seed) {
  KvInputs in;
  const int64_t qc = int64_t{c.n_heads} * c.d_head, kc = int64_t{c.n_kv_heads} * c.d_head;
  for (size_t s = 0; s < c.q_lens.size(); s++) {
    const int full = c.first[s] + c.kv_lens[s];
    in.cu_q.push_back(in.cu_q.back() + c.q_lens[s]);
    in.cu_kv.push_back(in.cu_kv.back() + c.kv_lens[s]);
    in.cu_full.push_back(in.cu_full.back() + full);
    in.max_full = std::max(in.max_full, full);
  }
  const int64_t n_full = in.cu_full.back();
  in.q_full = random_floats(seed, static_cast<size_t>(n_full * qc));
  in.k_full = random_floats(seed + 1, static_cast<size_t>(n_full * kc));
  in.v_full = random_floats(seed + 2, static_cast<size_t>(n_full * kc));
  for (size_t s = 0; s < c.q_lens.size(); s++) {
    const int64_t end = in.cu_full[s + 1];
    in.q.insert(in.q.end(), in.q_full.begin() + (end - c.q_lens[s]) * qc, in.q_full.begin() + end * qc);
    in.k.insert(in.k.end(), in.k_full.begin() + (end - c.kv_lens[s]) * kc, in.k_full.begin() + end * kc);
    in.v.insert(in.v.end(), in.v_full.begin() + (end - c.kv_lens[s]) * kc, in.v_full.begin() + end * kc);
  }
  return in;
}

AttentionArgs kv_args(const KvCase& c) {
  AttentionArgs a;
  a.n_seqs = static_cast<int>(c.q_lens.size());
  a.max_seqlen = *std::max_element(c.q_lens.begin(), c.q_lens.end());
  a.kv_rows.max_seqlen = *std::max_element(c.kv_lens.begin(), c.kv_lens.end());
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.d_head = c.d_head;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head));
  a.causal = c.causal;
  a.window_left = c.window_left;
  return a;
}

// Rows [end - q_len, end) of every sequence of a one-pass output over the full sequences.
std::vector<float> last_rows(const std::vector<float>& full, const KvInputs& in, const KvCase& c, int64_t cols) {
  std::vector<float> out;
  for (size_t s = 0; s < c.q_lens.size(); s++)
    out.insert(out.end(), full.begin() + (in.cu_full[s + 1] - c.q_lens[s]) * cols, full.begin() + in.cu_full[s + 1] * cols);
  return out;
}

void run_kv_case(const KvCase& c, uint32_t seed) {
  KvInputs in = make_kv_inputs(c, seed);
  const int64_t qc = int64_t{c.n_heads} * c.d_head, kc = int64_t{c.n_kv_heads} * c.d_head;
  const int64_t nq = in.cu_q.back(), nkv = in.cu_kv.back(), nfull = in.cu_full.back();
  // The reference with kv_rows, and the reference over the full sequences in one pass (with the
  // same prefix per sequence: it does not depend on positions).
  std::vector<float> want(static_cast<size_t>(nq * qc)), full_out(static_cast<size_t>(nfull * qc));
  std::vector<float> pk, pv;
  if (c.prefix) {
    pk = random_floats(seed + 3, c.q_lens.size() * static_cast<size_t>(kc));
    pv = random_floats(seed + 4, c.q_lens.size() * static_cast<size_t>(kc));
  }
  auto set_prefix = [&](AttentionArgs& a) {
    if (!c.prefix) return;
    a.prefix_k = host_tensor(pk, static_cast<int64_t>(c.q_lens.size()), kc);
    a.prefix_v = host_tensor(pv, static_cast<int64_t>(c.q_lens.size()), kc);
    a.prefix_bias = c.prefix_bias;
  };
  AttentionArgs ra = kv_args(c);
  set_prefix(ra);
  ra.q = host_tensor(in.q, nq, qc);
  ra.k = host_tensor(in.k, nkv, kc);
  ra.v = host_tensor(in.v, nkv, kc);
  ra.out = host_tensor(want, nq, qc);
  ra.cu_seqlens = ra.cu_seqlens_host = in.cu_q.data();
  ra.kv_rows.cu_seqlens = ra.kv_rows.cu_seqlens_host = in.cu_kv.data();
  cpu::ref::attention(ra);
  AttentionArgs fa = kv_args(c);
  set_prefix(fa);
  fa.kv_rows = AttentionKvRows{};
  fa.max_seqlen = in.max_full;
  fa.q = host_tensor(in.q_full, nfull, qc);
  fa.k = host_tensor(in.k_full, nfull, kc);
  fa.v = host_tensor(in.v_full, nfull, kc);
  fa.out = host_tensor(full_out, nfull, qc);
  fa.cu_seqlens = fa.cu_seqlens_host = in.cu_full.data();
  cpu::ref::attention(fa);
  // What the feature means: queries after cached keys get exactly their rows of one pass (the
  // cases keep every visible key inside the cached range).
  REQUIRE(std::memcmp(want.data(), last_rows(full_out, in, c, qc).data(), want.size() * 4) == 0);

  for (auto& bt : backends_under_test()) {
    const double atol = 2 * ra.scale * product_sum_tolerance(bt, c.d_head, c.d_head) +
                        product_sum_tolerance(bt, ra.kv_rows.max_seqlen + (c.prefix ? 1 : 0), 1.0) + 8 * kF32Eps;
    DeviceArena arena(*bt.backend);
    AttentionArgs a = ra;
    a.q = arena.upload(ra.q);
    a.k = arena.upload(ra.k);
    a.v = arena.upload(ra.v);
    a.out = arena.poisoned(DType::F32, nq, qc);
    a.cu_seqlens = arena.upload_ints(in.cu_q);
    a.kv_rows.cu_seqlens = arena.upload_ints(in.cu_kv);
    if (c.prefix) {
      a.prefix_k = arena.upload(ra.prefix_k);
      a.prefix_v = arena.upload(ra.prefix_v);
    }
    bt.backend->attention(a);
    const std::string what = bt.name + " attention after cached keys, heads " + std::to_string(c.n_heads) + "/" +
                             std::to_string(c.n_kv_heads) + " d_head " + std::to_string(c.d_head) + " window " +
                             std::to_string(c.window_left) + (c.prefix ? " prefix bias " + std::to_string(c.prefix_bias) : std::string());
    const std::vector<float> got = arena.download(a.out);
    expect_close(got, want, atol, 0, what, qc);
    const Mismatch mm = compare(got, want);
    INFO(what << ": NMSE " << mm.nmse << " (ceiling " << bt.nmse_ceiling << ")");
    CHECK(mm.nmse <= bt.nmse_ceiling);
    // The same backend over the full sequences in one pass: bit-identical rows, since every
    // sequence's cached keys start at a multiple of 64 positions (the key-tile grids coincide).
    AttentionArgs f = fa;
    f.q = arena.upload(fa.q);
    f.k = arena.upload(fa.k);
    f.v = arena.upload(fa.v);
    f.out = arena.poisoned(DType::F32, nfull, qc);
    f.cu_seqlens = arena.upload_ints(in.cu_full);
    if (c.prefix) {
      f.prefix_k = a.prefix_k;
      f.prefix_v = a.prefix_v;
    }
    bt.backend->attention(f);
    const std::vector<float> one_pass = last_rows(arena.download(f.out), in, c, qc);
    INFO(what << ": against its own one-pass rows");
    CHECK(std::memcmp(got.data(), one_pass.data(), got.size() * 4) == 0);
  }
}

}  // namespace

TEST_CASE("attention after cached keys matches the reference and one pass", "[kernels][attention][kv]") {
  const std::vector<KvCase> cases = {
      // q_lens, kv_lens (cached + current), first cached position; all keys from 0
      {{1, 5, 13}, {1, 12, 40}, {0, 0, 0}, 4, 2, 64, true, -1},
      {{7, 1, 33}, {70, 9, 100}, {0, 0, 0}, 8, 2, 32, true, -1},   // GQA 4:1, one new token
      {{32, 3}, {129, 200}, {0, 0}, 4, 1, 128, true, -1},          // MQA, long caches
      {{16, 40}, {150, 41}, {0, 0}, 2, 1, 256, true, -1},          // gemma's head size
      {{20, 17}, {90, 57}, {0, 0}, 2, 2, 16, false, -1},           // bidirectional (keys after queries do not exist)
      // trimmed caches: keys from position 64 or 128 on, the window sees none before them
      {{50, 9}, {136, 73}, {64, 128}, 4, 2, 64, true, 63},
      {{33, 64}, {200, 130}, {128, 64}, 4, 1, 256, true, 64},
  };
  uint32_t seed = 500;
  for (const KvCase& c : cases) run_kv_case(c, seed += 10);
}

TEST_CASE("attention after cached keys with a KV-Embedding prefix matches the reference and one pass", "[kernels][attention][kv]") {
  // The two features together (the engine never combines them: re-routing needs the whole
  // sequence), each kernel treating each one whole: the prefix is seen by every query whatever
  // the key positions.
  const std::vector<KvCase> cases = {
      {{1, 5, 13}, {1, 12, 40}, {0, 0, 0}, 4, 2, 64, true, -1, true, 1.0f},
      {{32, 3}, {129, 200}, {0, 0}, 4, 1, 128, true, -1, true, 2.0f},
      {{16, 40}, {150, 41}, {0, 0}, 2, 1, 256, true, -1, true, -0.5f},
      {{50, 9}, {136, 73}, {64, 128}, 4, 2, 64, true, 63, true, 0.5f},  // trimmed cache, sliding window
  };
  uint32_t seed = 700;
  for (const KvCase& c : cases) run_kv_case(c, seed += 10);
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

// attention on every backend vs cpu/ref (double): packed variable-length sequences (lengths 1,
// primes, long), bidirectional and causal, grouped-query, sliding windows (one-sided and
// symmetric), d_head 16..256. Tolerance from the maths: a score s = scale * q.k has an f32 error
// <= d eps scale sum|q k| <= d eps scale d (inputs in [-1,1]); softmax turns a score error e into
// a relative probability error of about 2e, and the output is a convex mix of v rows (|v| <= 1),
// so |err| <= 2 d^2 eps scale + (len + 8) eps. The KV-Embedding prefix (one more key and value per
// sequence, with a logit bias) is one more term of the same sums; the reference's prefix is
// checked against the same sequence with the prefix inserted as its first token, and by hand. The
// position bias (relative buckets of a table, ALiBi slopes) adds |bias| eps to each logit's error;
// the bucket boundaries and slopes are checked against hand-written tables, the reference's bias
// by hand.
#include <cstring>
#include <map>

#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

namespace {

enum class PositionBias { None, Buckets, Alibi, Both };

// The bucket table (T5 / MPNet: 32 buckets, max distance 128) in [-2, 2) and/or ALiBi slopes
// (max bias 8) on `a`; returns the largest |bias| over keys at distances below `max_len`.
double set_position_bias(AttentionArgs& a, PositionBias kind, std::vector<float>& table, uint32_t seed, int max_len) {
  double largest = 0;
  if (kind == PositionBias::Buckets || kind == PositionBias::Both) {
    table = random_floats(seed, static_cast<size_t>(32 * a.n_heads), -2.0f, 2.0f);
    a.bias_table = host_tensor(table, 32, a.n_heads);
    a.bias_buckets = relative_buckets(32, 128);
    largest += 2;
  }
  if (kind == PositionBias::Alibi || kind == PositionBias::Both) {
    a.alibi_max_bias = 8.0f;
    largest += max_len;  // every slope 2^(-8 (h + 1) / P) ... is below 1
  }
  return largest;
}

struct Case {
  std::vector<int32_t> lens;
  int n_heads, n_kv_heads, d_head;
  bool causal;
  int window_left, window_right;
  bool prefix = false;  // a KV-Embedding prefix key/value per sequence
  float prefix_bias = 0.0f;
  PositionBias bias = PositionBias::None;
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
  std::vector<float> table;
  const double max_bias = set_position_bias(ra, c.bias, table, seed + 5, ra.max_seqlen);
  cpu::ref::attention(ra);
  const double d = c.d_head;
  std::map<std::string, std::vector<float>> outputs;  // per backend name
  for (auto& bt : backends_under_test()) {
    // A score s = scale * q.k is a sum of d products with sum |q k| <= d (inputs in [-1, 1]): its
    // error is scale * product_sum_tolerance(d, d); softmax turns a score error e into a relative
    // probability error of about 2e, moving the output (a convex mix of v rows, |v| <= 1) by 2e;
    // P . V then adds its own sum of len products with sum p |v| <= sum p, divided by sum p.
    // A bias b adds |b| eps to the logit's rounding (and |q.k| scale eps with it).
    const double atol = 2 * ra.scale * product_sum_tolerance(bt, c.d_head, d) +
                        product_sum_tolerance(bt, ra.max_seqlen + (c.prefix ? 1 : 0), 1.0) + 8 * kF32Eps + 2 * max_bias * kF32Eps;
    DeviceArena arena(*bt.backend);
    AttentionArgs a = ra;
    if (!table.empty()) a.bias_table = arena.upload(ra.bias_table);
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
    std::string what = bt.name + (c.prefix ? " prefix bias " + std::to_string(c.prefix_bias) : std::string()) +
                       " position bias " + std::to_string(static_cast<int>(c.bias)) + " attention heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) +
                       " d_head " + std::to_string(c.d_head) + (c.causal ? " causal" : " bidirectional") + " window " +
                       std::to_string(c.window_left) + "/" + std::to_string(c.window_right);
    const std::vector<float> got = arena.download(a.out);
    outputs[bt.name] = got;
    expect_close(got, want, atol, 0, what, qc);
    // The worst-case bound grows with d^2: a systematic error well inside it (1e-4 at head size
    // 256) must still fail, by the mean squared error.
    const Mismatch mm = compare(got, want);
    INFO(what << ": NMSE " << mm.nmse << " (ceiling " << bt.nmse_ceiling << ")");
    CHECK(mm.nmse <= bt.nmse_ceiling);
  }
  // The AVX2 and AVX-512 attentions sum every score and output in the same order whatever their
  // tiles (6 x 16 and 12 x 32 rows x columns), so they give the same bits; the avx512 level's int8
  // compute type runs its f32 attention (cpu/kernel_table.cpp), and so does its bf16 one where
  // the vdpbf16ps attention does not apply (a position bias, a head size not a multiple of 32).
  auto same_bits = [&](const std::string& x, const std::string& y) {
    if (!outputs.count(x) || !outputs.count(y)) return;
    INFO(x << " vs " << y);
    CHECK(std::memcmp(outputs[x].data(), outputs[y].data(), outputs[x].size() * 4) == 0);
  };
  same_bits("cpu-avx2", "cpu-avx512");
  same_bits("cpu-avx512", "cpu-avx512-int8");
  if (c.bias != PositionBias::None || c.d_head % 32 != 0) same_bits("cpu-avx512", "cpu-avx512-bf16");
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

TEST_CASE("relative position buckets are HF's", "[kernels][attention][bias]") {
  // T5 / MPNet (32 buckets, max distance 128), per direction, by hand from
  // exact + trunc(ln(n / 8) / ln(128 / 8) * 8): 0-7 -> n, 8-11 -> 8, 12-15 -> 9, 16-22 -> 10,
  // 23-31 -> 11, 32-45 -> 12, 46-63 -> 13, 64-90 -> 14, >= 91 -> 15 (at 16, 32 and 64 the f32
  // quotient rounds to the whole number: the higher bucket). Keys after the query add 16.
  const RelativeBuckets b = relative_buckets(32, 128);
  const std::vector<std::pair<int, int>> first_of = {{8, 8}, {12, 9}, {16, 10}, {23, 11}, {32, 12}, {46, 13}, {64, 14}, {91, 15}};
  for (int n = 0; n < 8; n++) {
    CHECK(b(-n) == n);
    CHECK(b(n) == (n == 0 ? 0 : 16 + n));
  }
  for (size_t k = 0; k < first_of.size(); k++) {
    const int lo = first_of[k].first, hi = k + 1 < first_of.size() ? first_of[k + 1].first - 1 : 5000;
    for (int n : {lo, hi}) {
      INFO("distance " << n);
      CHECK(b(-n) == first_of[k].second);
      CHECK(b(n) == 16 + first_of[k].second);
    }
  }
  CHECK_THROWS_AS(relative_buckets(31, 128), Error);
  CHECK_THROWS_AS(relative_buckets(32, 4), Error);
}

TEST_CASE("ALiBi slopes are the paper's", "[kernels][attention][bias]") {
  // 8 heads: 2^-1 .. 2^-8. 12 heads: those 8, then the odd steps of 16 heads' 2^-0.5 spacing:
  // 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (jina-bert-v2's get_alibi_slopes, llama.cpp's m1 powers).
  for (int h = 0; h < 8; h++) CHECK(alibi_slope(h, 8, 8.0f) == static_cast<float>(std::exp2(-(h + 1.0))));
  const double twelve[] = {-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5};
  for (int h = 0; h < 12; h++) CHECK(alibi_slope(h, 12, 8.0f) == static_cast<float>(std::exp2(twelve[h])));
}

TEST_CASE("the reference adds the position bias to each logit", "[kernels][attention][bias]") {
  // q = 0: the logits are the bias alone. One sequence of 3 tokens, 1 head of size 16, v row j
  // all equal to j. ALiBi with one head: slope 2^-8; buckets: table row b = b / 10.
  // Query 0 sees distances 0, 1, 2 (keys after it: buckets 0, 17, 18 -> 0, 1.7, 1.8), minus
  // 2^-8 (0, 1, 2): logits 0, 1.6960938, 1.7921875; output = sum_j j e^l_j / sum e^l_j.
  std::vector<float> q(48, 0.0f), k = random_floats(5, 48), v(48), out(48), table(32);
  for (int j = 0; j < 3; j++) std::fill(v.begin() + 16 * j, v.begin() + 16 * (j + 1), static_cast<float>(j));
  for (int b = 0; b < 32; b++) table[static_cast<size_t>(b)] = static_cast<float>(b) / 10.0f;
  std::vector<int32_t> cu = {0, 3};
  AttentionArgs a;
  a.q = host_tensor(q, 3, 16);
  a.k = host_tensor(k, 3, 16);
  a.v = host_tensor(v, 3, 16);
  a.out = host_tensor(out, 3, 16);
  a.cu_seqlens = a.cu_seqlens_host = cu.data();
  a.n_seqs = 1;
  a.max_seqlen = 3;
  a.n_heads = a.n_kv_heads = 1;
  a.d_head = 16;
  a.bias_table = host_tensor(table, 32, 1);
  a.bias_buckets = relative_buckets(32, 128);
  a.alibi_max_bias = 8.0f;
  cpu::ref::attention(a);
  const double l1 = 1.7 - 1.0 / 256, l2 = 1.8 - 2.0 / 256;
  const double want0 = (std::exp(l1) + 2 * std::exp(l2)) / (1 + std::exp(l1) + std::exp(l2));
  CHECK_THAT(out[0], Catch::Matchers::WithinAbs(want0, 1e-6));
  // Query 2 sees distances -2, -1, 0: buckets 2, 1, 0 -> 0.2, 0.1, 0 minus 2^-8 (2, 1, 0).
  const double m0 = 0.2 - 2.0 / 256, m1 = 0.1 - 1.0 / 256;
  const double want2 = (std::exp(m1) + 2) / (std::exp(m0) + std::exp(m1) + 1);
  CHECK_THAT(out[32], Catch::Matchers::WithinAbs(want2, 1e-6));
}

TEST_CASE("attention with a position bias matches the reference", "[kernels][attention][bias]") {
  Case buckets{{5, 1, 13, 2, 140}, 4, 4, 64, false, -1, -1};
  buckets.bias = PositionBias::Buckets;
  Case alibi{{31, 7, 200}, 12, 12, 32, false, -1, -1};  // 12 heads: slopes of both kinds
  alibi.bias = PositionBias::Alibi;
  Case both{{40, 3}, 4, 2, 16, true, 20, -1};  // with GQA, a causal window
  both.bias = PositionBias::Both;
  Case t5{{17, 9}, 2, 2, 128, false, -1, -1};
  t5.bias = PositionBias::Buckets;
  uint32_t seed = 5000;
  for (const Case& c : {buckets, alibi, both, t5}) run_case(c, seed += 10);
  run_case(buckets, 6000, 3);  // rows at an offset
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

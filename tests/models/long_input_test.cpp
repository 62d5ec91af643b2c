// Long inputs of causal models run in pieces with a KV cache (Runner::run_in_pieces) against one
// pass over the whole sequence (Runner::run): hidden states and last / cls / rank rows
// bit-identical, mean pooling within the rounding of run()'s f32 sum (the pieces sum in double):
// |mean_f32 - mean_exact| <= (n + 2) eps mean_t |x_t| per element, plus eps |mean| for the final
// rounding. On the tiny decoders of tests/fixtures/models, a synthetic gemma3 with 8-token
// sliding windows (whose cache moves its rows many times), for several piece sizes; a
// bidirectional model is refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "engine/api.h"
#include "engine/runner.h"
#include "tests/models/synthetic.h"
#include "tokenizer/tokenizer.h"

using namespace embed;
using namespace embed::test;

namespace {

const std::string kFixtures = std::string(EMBED_FIXTURES_DIR) + "/models/";
constexpr double kEps = 1.1920928955078125e-07;

SequenceInput make_sequence(int64_t len, int64_t n_vocab, uint32_t seed) {
  SequenceInput q;
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < len; i++) q.ids.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab)));
  q.special.assign(static_cast<size_t>(len), 0);
  q.special[0] = 1;  // a BOS to leave out with exclude_special
  return q;
}

// Mean pooling of the pieces vs one pass: the bound of the f32 sum over n rows (see the top).
void check_mean(const RunOutput& pieces, const RunOutput& one, const std::vector<float>& hidden, const SequenceInput& q,
                bool exclude_special, const std::string& what) {
  REQUIRE(pieces.cols == one.cols);
  const int64_t d = one.cols, len = static_cast<int64_t>(q.ids.size());
  size_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < d; i++) {
    double abs_sum = 0, n = 0;
    for (int64_t t = 0; t < len; t++) {
      if (exclude_special && q.special[static_cast<size_t>(t)]) continue;
      abs_sum += std::fabs(hidden[static_cast<size_t>(t * d + i)]);
      n++;
    }
    const double tol = (n + 2) * kEps * abs_sum / n + kEps * std::fabs(one.pooled[static_cast<size_t>(i)]);
    const double err = std::fabs(static_cast<double>(pieces.pooled[static_cast<size_t>(i)]) - one.pooled[static_cast<size_t>(i)]);
    worst = std::max(worst, err / tol);
    bad += err > tol;
  }
  INFO(what << ": mean pooling, worst error / bound " << worst);
  CHECK(bad == 0);
}

// Every pooling the model has, one pass vs pieces of each size.
void check_model(const std::string& path, const std::vector<int64_t>& lens, const std::vector<int64_t>& pieces) {
  BackendOptions bo;
  bo.threads = 2;
  auto m = LoadedModel::load(path, bo);
  Runner r(m, 2);
  const ModelInfo& info = m->info();
  REQUIRE(info.causal);
  std::vector<Pooling> poolings{Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last};
  if (info.n_cls_out() > 0) poolings.push_back(Pooling::Rank);
  uint32_t seed = 7;
  for (int64_t len : lens) {
    const SequenceInput q = make_sequence(len, info.n_vocab, seed++);
    PassOptions none;
    none.pooling = Pooling::None;
    const RunOutput hidden = r.run({q}, none);
    for (Pooling p : poolings)
      for (bool exclude : {false, true}) {
        if (exclude && p != Pooling::Mean) continue;
        PassOptions o;
        o.pooling = p;
        o.exclude_special = exclude;
        const RunOutput one = r.run({q}, o);
        for (int64_t piece : pieces) {
          if (piece >= len) continue;
          const RunOutput got = r.run_in_pieces(q, o, piece);
          const std::string what = path + " length " + std::to_string(len) + " pieces of " + std::to_string(piece) +
                                   " pooling " + pooling_name(p) + (exclude ? " without specials" : "");
          INFO(what);
          REQUIRE(got.rows == one.rows);
          REQUIRE(got.cols == one.cols);
          REQUIRE(got.cu_seqlens == one.cu_seqlens);
          if (p == Pooling::Mean) check_mean(got, one, hidden.pooled, q, exclude, what);
          else CHECK(std::memcmp(got.pooled.data(), one.pooled.data(), one.pooled.size() * 4) == 0);
        }
      }
  }
}

}  // namespace

TEST_CASE("tiny decoders run in pieces give the one-pass rows", "[models][long]") {
  // Context 128 tokens; pieces from one token to all but one.
  for (const char* name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3-embed", "tiny-qwen3-rerank"})
    check_model(kFixtures + name + "/model.gguf", {128, 37, 2}, {1, 5, 16, 50, 127});
}

TEST_CASE("sliding-window layers run in pieces give the one-pass rows", "[models][long]") {
  // gemma3 with 8-token windows on every other layer: the window layers keep 2 (8 + 64) + piece
  // rows and move the last ones to the front many times over 700 tokens.
  SyntheticSpec s;
  s.arch = "gemma3";
  s.d_model = 64;
  s.n_heads = 4;
  s.n_kv_heads = 1;
  s.d_ff = 96;
  s.n_ctx = 1024;
  s.n_layers = 3;
  TempFile f(".gguf");
  write_synthetic(s, f.path);
  check_model(f.path, {700, 65}, {1, 9, 64, 100, 333});
}

TEST_CASE("a bidirectional model cannot run in pieces", "[models][long]") {
  SyntheticSpec s;
  TempFile f(".gguf");
  write_synthetic(s, f.path);
  BackendOptions bo;
  bo.threads = 2;
  Runner r(LoadedModel::load(f.path, bo), 2);
  PassOptions o;
  try {
    r.run_in_pieces(make_sequence(20, s.n_vocab, 1), o, 8);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("pieces") != std::string::npos);
  }
}

TEST_CASE("the API runs a decoder's long text in pieces of batch_tokens", "[models][long]") {
  // The same texts with passes of 4096 tokens (one pass each) and of 16 tokens (pieces): the same
  // last-token rows, bit for bit, in input order.
  auto m = Model::load(kFixtures + "tiny-qwen3-embed/model.gguf");
  REQUIRE(m.ok());
  Context ctx(m.value(), 2);
  const std::vector<std::string> texts = {
      "a short one",
      "The keys and values of earlier pieces are kept per sequence, so the last token of a long text sees all of "
      "it, exactly as in one pass over the whole text, while memory stays bounded by the piece and the cache.",
      "two"};
  RunSettings whole, small;
  small.batch_tokens = 16;
  auto a = ctx.embed(texts, {}, whole);
  auto b = ctx.embed(texts, {}, small);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a.value().n_tokens[1] > 16);
  REQUIRE(a.value().data.size() == b.value().data.size());
  CHECK(std::memcmp(a.value().data.data(), b.value().data.data(), a.value().data.size() * 4) == 0);
}

namespace {

// The documented window rule (docs/long-inputs.md), worked here from the tokenizer's output: the
// text's tokens without the leading / trailing special tokens, windows of cap = max_tokens -
// specials body tokens every cap - overlap tokens, the last one ending at the body's end, each
// with the special tokens around it; the row is the mean of the windows' mean-pooled vectors
// weighted by their body tokens.
std::vector<std::vector<int32_t>> windows_by_hand(const tok::Encoding& e, int64_t max_tokens, int64_t overlap, std::vector<double>* weights) {
  int64_t head = 0, tail = 0, n = static_cast<int64_t>(e.size());
  while (e.sequence[static_cast<size_t>(head)] < 0) head++;
  while (e.sequence[static_cast<size_t>(n - 1 - tail)] < 0) tail++;
  const int64_t body = n - head - tail, cap = max_tokens - head - tail;
  std::vector<std::pair<int64_t, int64_t>> spans;
  int64_t s = 0;
  for (; s + cap < body; s += cap - overlap) spans.emplace_back(s, s + cap);
  spans.emplace_back(body - cap, body);
  std::vector<std::vector<int32_t>> out;
  for (auto [a, b] : spans) {
    std::vector<int32_t> ids(e.ids.begin(), e.ids.begin() + head);
    ids.insert(ids.end(), e.ids.begin() + head + a, e.ids.begin() + head + b);
    ids.insert(ids.end(), e.ids.end() - tail, e.ids.end());
    out.push_back(ids);
    weights->push_back(static_cast<double>(b - a));
  }
  return out;
}

}  // namespace

TEST_CASE("long_inputs chunk: a long text's row is the token-weighted mean of its windows", "[models][long]") {
  // Encoder (tiny BERT, mean pooling) and decoder (tiny qwen3, last pooling), windows of 24 tokens
  // sharing 6; a short text in the same request stays one pass. Compared unnormalized (the mean
  // in double of f32 rows: equal within 2 f32 ulps of the largest window value), then normalized.
  for (const char* name : {"tiny-bert-rank", "tiny-qwen3-embed"}) {
    auto m = Model::load(kFixtures + name + "/model.gguf");
    REQUIRE(m.ok());
    Context ctx(m.value(), 2);
    const std::string long_text =
        "Late in the evening the old lighthouse keeper climbed the stairs again, counting each of the ninety steps, "
        "because the lamp had flickered twice and the fishing boats were still out beyond the northern rocks.";
    const std::vector<std::string> texts = {"short text", long_text};
    Request r;
    r.max_tokens = 24;
    r.long_overlap = 6;
    r.long_inputs = LongInputs::Chunk;
    r.normalize = -1;
    auto got = ctx.embed(texts, r);
    REQUIRE(got.ok());
    REQUIRE(got.value().rows == 2);

    const tok::Encoding e = m.value()->tokenizer().encode(long_text);
    REQUIRE(static_cast<int64_t>(e.size()) > 3 * 24);
    std::vector<double> w;
    Request plain;
    plain.normalize = -1;
    auto win = ctx.embed_ids(windows_by_hand(e, 24, 6, &w), plain);
    REQUIRE(win.ok());
    auto short_one = ctx.embed({"short text"}, plain);
    REQUIRE(short_one.ok());
    const Embeddings& g = got.value();
    CHECK(std::memcmp(g.row(0), short_one.value().row(0), static_cast<size_t>(g.cols) * 4) == 0);
    double wsum = 0;
    for (double x : w) wsum += x;
    for (int64_t c = 0; c < g.cols; c++) {
      double acc = 0, mx = 0;
      for (size_t k = 0; k < w.size(); k++) {
        acc += w[k] * win.value().row(static_cast<int64_t>(k))[c];
        mx = std::max(mx, static_cast<double>(std::fabs(win.value().row(static_cast<int64_t>(k))[c])));
      }
      INFO(name << " column " << c);
      CHECK(std::fabs(g.row(1)[c] - acc / wsum) <= 2 * kEps * mx);
    }
    CHECK(g.n_tokens[1] == static_cast<int32_t>(e.size()));
    // Without chunk the same text is refused, naming the limit.
    Request refuse;
    refuse.max_tokens = 24;
    CHECK_FALSE(ctx.embed(texts, refuse).ok());
  }
}

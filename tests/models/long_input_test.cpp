// Long inputs of causal models run in pieces with a KV cache (Runner::run_in_pieces) against one
// pass over the whole sequence (Runner::run): hidden states and last / cls / rank rows
// bit-identical, mean pooling within the rounding of run()'s f32 sum (the pieces sum in double):
// |mean_f32 - mean_exact| <= (n + 2) eps mean_t |x_t| per element, plus eps |mean| for the final
// rounding; hybrid pooling, fl(last + mean) / 2 both ways, adds the rounding of that sum to half
// the mean's bound: (bound + eps |last + mean| twice) / 2. On the tiny decoders of tests/fixtures/models, a synthetic gemma3 with 8-token
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

// Mean (or hybrid) pooling of the pieces vs one pass: the bound of the f32 sum over n rows (see the top).
void check_mean(const RunOutput& pieces, const RunOutput& one, const std::vector<float>& hidden, const SequenceInput& q,
                bool exclude_special, bool hybrid, const std::string& what) {
  REQUIRE(pieces.cols == one.cols);
  const int64_t d = one.cols, len = static_cast<int64_t>(q.ids.size());
  size_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < d; i++) {
    double abs_sum = 0, sum = 0, n = 0;
    for (int64_t t = 0; t < len; t++) {
      if (exclude_special && q.special[static_cast<size_t>(t)]) continue;
      abs_sum += std::fabs(hidden[static_cast<size_t>(t * d + i)]);
      sum += hidden[static_cast<size_t>(t * d + i)];
      n++;
    }
    double tol = (n + 2) * kEps * abs_sum / n + kEps * std::fabs(hybrid ? sum / n : one.pooled[static_cast<size_t>(i)]);
    if (hybrid) {
      const double last = hidden[static_cast<size_t>((len - 1) * d + i)];
      tol = (tol * (1 + 2 * kEps) + 2 * kEps * (std::fabs(last) + std::fabs(sum / n))) / 2;
    }
    const double err = std::fabs(static_cast<double>(pieces.pooled[static_cast<size_t>(i)]) - one.pooled[static_cast<size_t>(i)]);
    worst = std::max(worst, err / tol);
    bad += err > tol;
  }
  INFO(what << ": " << (hybrid ? "hybrid" : "mean") << " pooling, worst error / bound " << worst);
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
  std::vector<Pooling> poolings{Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Hybrid};
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
          if (p == Pooling::Mean || p == Pooling::Hybrid) check_mean(got, one, hidden.pooled, q, exclude, p == Pooling::Hybrid, what);
          else CHECK(std::memcmp(got.pooled.data(), one.pooled.data(), one.pooled.size() * 4) == 0);
        }
      }
  }
}

}  // namespace

TEST_CASE("tiny decoders run in pieces give the one-pass rows", "[models][long]") {
  // Context 128 tokens; pieces from one token to all but one.
  for (const char* name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3-embed", "tiny-qwen3-rerank", "tiny-gemma3"})
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

namespace {

// Three texts of tiny-qwen3-embed, the middle one longer than 16 tokens, embedded with `req` in
// passes of 4096 tokens (one pass each) and of 16 tokens: {whole, small}.
std::pair<Embeddings, Embeddings> embed_in_small_passes(const Request& req) {
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
  auto a = ctx.embed(texts, req, whole);
  auto b = ctx.embed(texts, req, small);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a.value().n_tokens[1] > 16);
  REQUIRE(a.value().data.size() == b.value().data.size());
  return {a.value(), b.value()};
}

}  // namespace

TEST_CASE("the API runs a decoder's long text in pieces of batch_tokens", "[models][long]") {
  // The same last-token rows, bit for bit, in input order.
  const auto [whole, small] = embed_in_small_passes({});
  CHECK(std::memcmp(whole.data.data(), small.data.data(), whole.data.size() * 4) == 0);
}

namespace {

// The documented window rule (docs/long-inputs.md), worked here from the tokenizer's output: the
// text's tokens without the leading / trailing special tokens, windows of cap = max_tokens -
// specials body tokens every cap - overlap tokens, the last one ending at the body's end, each
// with the special tokens around it; the row is the mean of the windows' mean-pooled vectors
// weighted by their body tokens. With a template, its text before [text_begin, text_end) of the
// encoded string goes with the leading special tokens and its text after with the trailing ones.
std::vector<std::vector<int32_t>> windows_by_hand(const tok::Encoding& e, int64_t max_tokens, int64_t overlap, std::vector<double>* weights,
                                                  size_t text_begin = 0, size_t text_end = SIZE_MAX) {
  int64_t head = 0, tail = 0, n = static_cast<int64_t>(e.size());
  while (e.sequence[static_cast<size_t>(head)] < 0 || e.end[static_cast<size_t>(head)] <= text_begin) head++;
  while (e.sequence[static_cast<size_t>(n - 1 - tail)] < 0 || e.begin[static_cast<size_t>(n - 1 - tail)] >= text_end) tail++;
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

TEST_CASE("long_inputs chunk with a template: every window holds the template's text on both sides", "[models][long]") {
  auto m = Model::load(kFixtures + "tiny-qwen3-embed/model.gguf");
  REQUIRE(m.ok());
  Context ctx(m.value(), 2);
  const std::string before = "This sentence: \"", after = "\" means in one word: \"";
  const std::string long_text =
      "Late in the evening the old lighthouse keeper climbed the stairs again, counting each of the ninety steps, "
      "because the lamp had flickered twice and the fishing boats were still out beyond the northern rocks.";
  Request r;
  r.max_tokens = 40;
  r.long_overlap = 6;
  r.long_inputs = LongInputs::Chunk;
  r.normalize = -1;
  r.pooling = Pooling::Mean;
  r.prompt_template = before + "{text}" + after;
  auto got = ctx.embed({long_text}, r);
  REQUIRE(got.ok());
  REQUIRE(got.value().rows == 1);

  const tok::Encoding e = m.value()->tokenizer().encode_template(before + long_text + after, {{before.size(), before.size() + long_text.size()}}, {});
  std::vector<double> w;
  const std::vector<std::vector<int32_t>> wins = windows_by_hand(e, 40, 6, &w, before.size(), before.size() + long_text.size());
  REQUIRE(wins.size() >= 3);
  for (const std::vector<int32_t>& ids : wins) REQUIRE(ids.size() == 40);
  Request plain;
  plain.normalize = -1;
  plain.pooling = Pooling::Mean;
  auto win = ctx.embed_ids(wins, plain);
  REQUIRE(win.ok());
  double wsum = 0;
  for (double x : w) wsum += x;
  const Embeddings& g = got.value();
  for (int64_t c = 0; c < g.cols; c++) {
    double acc = 0, mx = 0;
    for (size_t k = 0; k < w.size(); k++) {
      acc += w[k] * win.value().row(static_cast<int64_t>(k))[c];
      mx = std::max(mx, static_cast<double>(std::fabs(win.value().row(static_cast<int64_t>(k))[c])));
    }
    INFO("column " << c);
    CHECK(std::fabs(g.row(0)[c] - acc / wsum) <= 2 * kEps * mx);
  }
}

TEST_CASE("KV-Embedding never runs in pieces: the Runner refuses, the API runs a long text in one pass", "[models][long][kv]") {
  BackendOptions bo;
  bo.threads = 2;
  const std::string path = kFixtures + "tiny-qwen3-embed/model.gguf";
  Runner r(LoadedModel::load(path, bo), 2);
  PassOptions o;
  o.pooling = Pooling::Hybrid;
  o.kv = KvRouting{0, 0, 1.0f};
  try {
    r.run_in_pieces(make_sequence(40, r.model().info().n_vocab, 3), o, 8);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("KV-Embedding") != std::string::npos);
  }
  // Through the API a text longer than batch_tokens runs in one pass: the rows of a pass large
  // enough for it, bit for bit (pieces would have re-routed each piece's own last token).
  Request req;
  req.kv_embedding = true;
  const auto [whole, small] = embed_in_small_passes(req);
  CHECK(std::memcmp(whole.data.data(), small.data.data(), whole.data.size() * 4) == 0);
  // And they are KV-Embedding's rows: hybrid pooling without re-routing gives another row.
  Request hybrid;
  hybrid.pooling = Pooling::Hybrid;
  const Embeddings plain = embed_in_small_passes(hybrid).first;
  CHECK(std::memcmp(whole.row(1), plain.row(1), static_cast<size_t>(whole.cols) * 4) != 0);
}

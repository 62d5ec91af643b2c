// Late chunking (docs/long-inputs.md): each chunk vector is the mean of its tokens' rows of the
// whole text's --pooling none output (token ranges worked out here from the tokenizer), and the
// chunks of every rule (tokens, sentences, separator, given spans), with and without windows,
// equal the PyTorch reference of tools/refgen/make_late_chunking.py on the tiny models: the same
// spans, and per chunk cosine >= 0.99999 as the other reference tests.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/api.h"
#include "tests/models/fixtures.h"
#include "tokenizer/tokenizer.h"

using namespace embed;
using namespace embed::test;

namespace {

const std::string kFixtures = std::string(EMBED_FIXTURES_DIR) + "/";
constexpr double kEps = 1.1920928955078125e-07;

}  // namespace

TEST_CASE("late chunking: a chunk is the mean of its tokens' rows of pooling none", "[models][late]") {
  for (const char* name : {"tiny-bert-rank", "tiny-qwen3-embed"}) {
    auto m = Model::load(kFixtures + "models/" + name + "/model.gguf");
    REQUIRE(m.ok());
    Context ctx(m.value(), 2);
    const std::string text = "The river runs past the old mill. It turns the wheel all day, and the miller grinds flour for the village.";
    Request none;
    none.pooling = Pooling::None;
    none.normalize = -1;
    auto rows = ctx.embed({text}, none);
    REQUIRE(rows.ok());
    Request lc;
    lc.late_chunking = true;
    lc.chunk_tokens = 5;
    lc.normalize = -1;
    auto got = ctx.embed({"first", text}, lc);
    REQUIRE(got.ok());
    const Embeddings& g = got.value();
    // The text's tokens without its leading / trailing special tokens, every 5.
    const tok::Encoding e = m.value()->tokenizer().encode(text);
    int64_t head = 0, tail = 0, n = static_cast<int64_t>(e.size());
    while (e.sequence[static_cast<size_t>(head)] < 0) head++;
    while (e.sequence[static_cast<size_t>(n - 1 - tail)] < 0) tail++;
    const int64_t body = n - head - tail, chunks = (body + 4) / 5;
    REQUIRE(g.row_offsets == std::vector<int64_t>{0, 1, 1 + chunks});
    REQUIRE(static_cast<int64_t>(g.spans.size()) == 1 + chunks);
    for (int64_t c = 0; c < chunks; c++) {
      const int64_t a = head + 5 * c, b = head + std::min(body, 5 * c + 5);
      INFO(name << " chunk " << c);
      // ASCII text: code points are bytes. The span starts at the first token's first non-space
      // character and ends with the last token.
      size_t first = e.begin[static_cast<size_t>(a)];
      while (text[first] == ' ') first++;
      CHECK(g.spans[static_cast<size_t>(1 + c)].begin == static_cast<int64_t>(first));
      CHECK(g.spans[static_cast<size_t>(1 + c)].end == static_cast<int64_t>(e.end[static_cast<size_t>(b - 1)]));
      for (int64_t k = 0; k < g.cols; k++) {
        double acc = 0, mx = 0;
        for (int64_t t = a; t < b; t++) {
          acc += rows.value().row(t)[k];
          mx = std::max(mx, static_cast<double>(std::fabs(rows.value().row(t)[k])));
        }
        REQUIRE(std::fabs(g.row(1 + c)[k] - acc / static_cast<double>(b - a)) <= 2 * kEps * mx);
      }
    }
  }
}

TEST_CASE("late chunking equals the PyTorch reference", "[models][late]") {
  std::ifstream f(kFixtures + "late_chunking/cases.json");
  REQUIRE(f.good());
  const nlohmann::json doc = nlohmann::json::parse(f);
  const NpyArray want = read_npy(kFixtures + "late_chunking/vectors.npy");
  int checked = 0;
  for (const nlohmann::json& c : doc["cases"]) {
    auto m = Model::load(kFixtures + "models/" + c["model"].get<std::string>() + "/model.gguf");
    REQUIRE(m.ok());
    Context ctx(m.value(), 2);
    Request r;
    r.late_chunking = true;
    r.normalize = -1;
    r.max_tokens = c["max_tokens"].get<int64_t>();
    r.long_overlap = c["overlap"].get<int64_t>();
    if (c.contains("rule")) REQUIRE(parse_chunk_rule(c["rule"].get<std::string>(), &r.chunk_rule));
    if (c.contains("chunk_tokens")) r.chunk_tokens = c["chunk_tokens"].get<int64_t>();
    std::vector<std::vector<CharSpan>> given(1);
    if (c.contains("given_spans"))
      for (const auto& s : c["given_spans"]) given[0].push_back(CharSpan{s[0].get<int64_t>(), s[1].get<int64_t>()});
    const std::vector<std::string> texts = {c["text"].get<std::string>()};
    auto got = c.contains("given_spans") ? ctx.embed(texts, given, r) : ctx.embed(texts, r);
    REQUIRE(got.ok());
    const Embeddings& g = got.value();
    const auto spans = c["spans"];
    INFO(c["model"] << " " << c.value("rule", "spans") << ": " << spans.size() << " chunks, " << c["windows"] << " windows");
    REQUIRE(g.rows == static_cast<int64_t>(spans.size()));
    REQUIRE(g.cols == want.cols());
    const int64_t first = c["first_row"].get<int64_t>();
    double min_cos = 1;
    for (int64_t k = 0; k < g.rows; k++) {
      CHECK(g.spans[static_cast<size_t>(k)].begin == spans[static_cast<size_t>(k)][0].get<int64_t>());
      CHECK(g.spans[static_cast<size_t>(k)].end == spans[static_cast<size_t>(k)][1].get<int64_t>());
      min_cos = std::min(min_cos, cosine(g.row(k), want.row(first + k), g.cols));
    }
    std::printf("REFERENCE late chunking %-18s %-10s %2zu chunks %d windows  min cosine %.9f\n", c["model"].get<std::string>().c_str(),
                c.value("rule", std::string("spans")).c_str(), spans.size(), c["windows"].get<int>(), min_cos);
    CHECK(min_cos >= 0.99999);
    checked++;
  }
  CHECK(checked == static_cast<int>(doc["cases"].size()));
  CHECK(checked >= 9);
}

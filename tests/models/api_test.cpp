// The public API: prefill-and-pool by sequence id, hidden states, Result/Status errors with the
// input index, and embed() agreeing with run() on the same tokens. Uses the committed tiny
// Qwen3-Embedding fixture (reference values for it are checked in reference_test.cpp).
#include <catch2/catch.hpp>

#include <cstring>

#include "engine/api.h"
#include "tests/models/fixtures.h"
#include "tokenizer/tokenizer.h"

using namespace embed;

namespace {
const std::string kModel = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-qwen3-embed/model.gguf";
}

TEST_CASE("run() returns pooled vectors and hidden states by sequence id", "[api]") {
  auto m = Model::load(kModel, ModelOptions{Device::Cpu, 2, 0});
  REQUIRE(m.ok());
  const test::Fixture f = test::load_fixture(std::string(EMBED_FIXTURES_DIR) + "/models/tiny-qwen3-embed");
  const test::NpyArray last = f.npy("pooled_last.npy");
  Context ctx(m.value(), 2);
  TokenBatch batch;
  batch.add(42, f.cases[3].ids);
  batch.add(-1, f.cases[0].ids);
  batch.add(7, f.cases[5].ids);
  Request o;
  o.pooling = Pooling::Last;
  o.normalize = -1;
  o.hidden_states = true;
  auto r = ctx.run(batch, o);
  REQUIRE(r.ok());
  const BatchResult& b = r.value();
  CHECK(b.pooled_dim() == f.d_model);
  for (auto [id, c] : {std::pair{42, 3}, {-1, 0}, {7, 5}}) {
    INFO("sequence id " << id);
    CHECK(b.n_tokens(id) == static_cast<int64_t>(f.cases[c].ids.size()));
    CHECK(test::cosine(b.pooled(id), last.row(c), f.d_model) >= 0.99999);
    // Last pooling = the last token's hidden state.
    CHECK(std::memcmp(b.pooled(id), b.hidden(id) + (b.n_tokens(id) - 1) * f.d_model, f.d_model * 4) == 0);
  }
}

TEST_CASE("embed() equals run() on the tokenizer's ids", "[api]") {
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context ctx(m.value(), 2);
  const std::vector<std::string> texts = {"A man is playing a guitar.", "Someone plays.", "x"};
  Request eo;
  eo.dimensions = 5;
  auto e = ctx.embed(texts, eo);
  REQUIRE(e.ok());
  REQUIRE(e.value().cols == 5);
  TokenBatch batch;
  for (size_t i = 0; i < texts.size(); i++) batch.add(static_cast<int32_t>(i), m.value()->tokenizer().encode(texts[i]).ids);
  auto r = ctx.run(batch, eo);
  REQUIRE(r.ok());
  for (size_t i = 0; i < texts.size(); i++)
    CHECK(std::memcmp(e.value().row(static_cast<int64_t>(i)), r.value().pooled(static_cast<int32_t>(i)), e.value().cols * 4) == 0);
}

TEST_CASE("API errors come back as Status with the input index", "[api]") {
  auto bad = Model::load("/nonexistent.gguf");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::Io);
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context ctx(m.value(), 1);
  TokenBatch dup;
  dup.add(1, {1, 2});
  dup.add(1, {3});
  auto r = ctx.run(dup);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("sequence id 1 appears twice"));
  std::string long_text;
  for (int i = 0; i < 300; i++) long_text += "word ";
  auto e = ctx.embed({"short", long_text});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().kind == ErrorKind::InvalidArgument);
  CHECK(e.error().index == 1);
  CHECK_THAT(e.error().message, Catch::Contains("more than the limit of 128"));
  Request t;
  t.truncate = true;
  auto ok = ctx.embed({"short", long_text}, t);
  REQUIRE(ok.ok());
  CHECK(ok.value().n_tokens[1] == 128);
  Request d;
  d.dimensions = 1000;
  auto dims = ctx.embed({"short"}, d);
  REQUIRE_FALSE(dims.ok());
  CHECK_THAT(dims.error().message, Catch::Contains("dimensions 1000"));
}

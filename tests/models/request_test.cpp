// The request type and the one pipeline: resolve_request's checks and defaults, prompts (model
// metadata > presets, the precedence rule, bad metadata refused at load), truncation direction
// through the API on hand-worked ids, finish_rows on hand-computed values, and rows of different
// requests sharing one forward pass bit-identical to each request run alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "engine/api.h"
#include "engine/pipeline.h"
#include "tests/models/synthetic.h"

using namespace embed;
using namespace embed::test;

namespace {

// A synthetic BERT with a WordPiece vocabulary: [PAD] [UNK] [CLS] [SEP], then words (GGUF
// spelling: a word-initial piece starts with U+2581), then filler up to the model's 100 rows.
// `prompts` adds embedding.prompt.* metadata.
const std::vector<std::string> kWords = {"hello", "world", "foo", "bar", "query", ":", "passage", "search", "doc", "a", "b", "c"};

void write_model(const std::string& path, const std::function<void(gguf::Writer&)>& prompts = nullptr) {
  SyntheticSpec s;
  s.edit_metadata = [&](gguf::Writer& w) {
    std::vector<std::string> toks = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
    for (const std::string& t : kWords) toks.push_back("\xe2\x96\x81" + t);
    while (toks.size() < 100) toks.push_back("filler" + std::to_string(toks.size()));
    w.set_string("tokenizer.ggml.model", "bert");
    w.set_string_array("tokenizer.ggml.tokens", toks);
    w.set<uint32_t>("tokenizer.ggml.padding_token_id", 0);
    w.set<uint32_t>("tokenizer.ggml.unknown_token_id", 1);
    w.set<uint32_t>("tokenizer.ggml.cls_token_id", 2);
    w.set<uint32_t>("tokenizer.ggml.seperator_token_id", 3);
    if (prompts) prompts(w);
  };
  write_synthetic(s, path);
}

int32_t id_of(const std::string& word) {
  for (size_t i = 0; i < kWords.size(); i++)
    if (kWords[i] == word) return static_cast<int32_t>(i + 4);
  return -1;
}

std::shared_ptr<const Model> load(const std::string& path) {
  auto m = Model::load(path, ModelOptions{Device::Cpu, 2, 0});
  if (!m) FAIL(m.error().message);
  return m.value();
}

void same_rows(const Embeddings& a, const Embeddings& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  CHECK(std::memcmp(a.data.data(), b.data.data(), a.data.size() * 4) == 0);
}

}  // namespace

TEST_CASE("finish_rows: Matryoshka truncation then llama.cpp's normalization codes, by hand", "[api][request]") {
  // x = (3, -4, 12): L2 of the first 2 -> (0.6, -0.8); L1 -> (3/7, -4/7); max-abs -> x * 32760 / 4;
  // p=3 -> x / (27+64)^(1/3); all 3 values, L2 -> x / 13.
  const std::vector<float> x = {3.0f, -4.0f, 12.0f};
  auto run = [&](int p, int dims) {
    std::vector<float> y(static_cast<size_t>(dims > 0 ? dims : 3));
    finish_rows(x.data(), 1, 3, RowFinish{p, dims}, y.data());
    return y;
  };
  CHECK(run(2, 2) == std::vector<float>{0.6f, -0.8f});
  CHECK(run(1, 2) == std::vector<float>{3.0f / 7.0f, -4.0f / 7.0f});
  CHECK(run(0, 2) == std::vector<float>{24570.0f, -32760.0f});
  CHECK(run(-1, 2) == std::vector<float>{3.0f, -4.0f});
  CHECK(run(3, 2)[0] == Approx(3.0 / std::cbrt(91.0)).epsilon(1e-7));
  CHECK(run(2, 0) == std::vector<float>{3.0f / 13.0f, -4.0f / 13.0f, 12.0f / 13.0f});
  const std::vector<float> zero = {0.0f, 0.0f};  // a zero row stays zero
  std::vector<float> y(2, 1.0f);
  finish_rows(zero.data(), 1, 2, RowFinish{2, 0}, y.data());
  CHECK(y == zero);
}

TEST_CASE("resolve_request: defaults and one message per bad field", "[api][request]") {
  ModelDescription d;
  d.path = "m.gguf";
  d.d_model = 32;
  d.embedding_dim = 16;
  d.n_ctx = 64;
  d.default_pooling = Pooling::Mean;
  const ResolvedRequest r = resolve_request(d, Request{}, Task::Embed);
  CHECK(r.pooling == Pooling::Mean);
  CHECK(r.finish.normalize == 2);
  CHECK(r.finish.dims == 0);
  CHECK(r.max_tokens == 64);
  CHECK(r.truncation_direction == TruncationDirection::Right);
  CHECK(r.prompt.empty());
  auto message = [&](const Request& q, Task t) {
    try {
      resolve_request(d, q, t);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  Request q;
  q.dimensions = 17;
  CHECK(message(q, Task::Embed) == "dimensions 17 is outside 1..16 for this model");
  q = {};
  q.pooling = Pooling::None;
  q.dimensions = 32;  // per-token rows are d_model wide
  CHECK(message(q, Task::Embed) == "(accepted)");
  q = {};
  q.normalize = -2;
  CHECK_THAT(message(q, Task::Embed), Catch::StartsWith("normalize -2 is not"));
  q = {};
  q.max_tokens = 65;
  CHECK(message(q, Task::Embed) == "max_tokens 65 is larger than the model's context length 64");
  q = {};
  q.exclude_special = true;
  q.pooling = Pooling::Cls;
  CHECK(message(q, Task::Embed) == "exclude_special applies to mean pooling only, not cls");
  CHECK_THAT(message(Request{}, Task::Rerank), Catch::Contains("not a reranker"));
  q = {};
  q.pooling = Pooling::Rank;
  CHECK_THAT(message(q, Task::Embed), Catch::Contains("classifier head"));
  q = {};
  q.prompt_name = "no-such-prompt";
  CHECK_THAT(message(q, Task::Embed), Catch::StartsWith("unknown prompt name 'no-such-prompt'") && Catch::Contains("e5-query"));
  // A reranker: rank pooling, no normalization by default; prompts and other poolings refused.
  d.n_cls_out = 1;
  const ResolvedRequest rr = resolve_request(d, Request{}, Task::Rerank);
  CHECK(rr.pooling == Pooling::Rank);
  CHECK(rr.finish.normalize == -1);
  q = {};
  q.prompt_name = "e5-query";
  CHECK(message(q, Task::Rerank) == "prompt and prompt_name apply to embedding, not to reranking");
  q = {};
  q.pooling = Pooling::Mean;
  CHECK_THAT(message(q, Task::Rerank), Catch::StartsWith("pooling mean does not score pairs"));
  TruncationDirection dir;
  CHECK(parse_truncation_direction("Left", &dir));
  CHECK(dir == TruncationDirection::Left);
  CHECK(parse_truncation_direction("right", &dir));
  CHECK(dir == TruncationDirection::Right);
  CHECK_FALSE(parse_truncation_direction("middle", &dir));
}

TEST_CASE("prompts: the model's metadata, then presets; explicit text > name > default > none", "[api][request]") {
  TempFile f(".gguf");
  write_model(f.path, [](gguf::Writer& w) {
    w.set_string_array("embedding.prompt.names", {"query", "e5-query"});
    w.set_string_array("embedding.prompt.texts", {"query : ", "search : "});  // the model's e5-query shadows the preset
    w.set_string("embedding.prompt.default_name", "query");
  });
  const auto m = load(f.path);
  const ModelPrompts& p = m->describe().prompts;
  CHECK(p.texts.size() == 2);
  CHECK(p.texts.at("query") == "query : ");
  CHECK(p.default_name == "query");
  CHECK(resolve_prompt(p, std::nullopt, "") == "query : ");              // the model's default
  CHECK(resolve_prompt(p, std::string(""), "") == "");                   // explicit empty text: none
  CHECK(resolve_prompt(p, std::string("doc "), "query") == "doc ");      // explicit text wins over a name
  CHECK(resolve_prompt(p, std::nullopt, "e5-query") == "search : ");     // the model's own before the preset
  CHECK(resolve_prompt(p, std::nullopt, "e5-passage") == "passage: ");   // then the presets
  CHECK(resolve_prompt(ModelPrompts{}, std::nullopt, "") == "");         // no default: none

  // Through the API: the default prompt is applied, and equals giving its text explicitly.
  Context ctx(m, 2);
  Request by_default, by_text, none;
  by_text.prompt = "query : ";
  none.prompt = "";
  const auto a = ctx.embed({"hello world"}, by_default), b = ctx.embed({"hello world"}, by_text), c = ctx.embed({"hello world"}, none);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  same_rows(a.value(), b.value());
  CHECK(a.value().n_tokens[0] == 6);  // [CLS] query : hello world [SEP]
  CHECK(c.value().n_tokens[0] == 4);  // [CLS] hello world [SEP]
}

TEST_CASE("bad prompt metadata fails at load with the key named", "[api][request]") {
  struct Case {
    std::function<void(gguf::Writer&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](gguf::Writer& w) {
         w.set_string_array("embedding.prompt.names", {"a", "b"});
         w.set_string_array("embedding.prompt.texts", {"x"});
       },
       "'embedding.prompt.names' has 2 entries but 'embedding.prompt.texts' has 1"},
      {[](gguf::Writer& w) {
         w.set_string_array("embedding.prompt.names", {"a", "a"});
         w.set_string_array("embedding.prompt.texts", {"x", "y"});
       },
       "'embedding.prompt.names' has the name 'a' twice"},
      {[](gguf::Writer& w) { w.set_string_array("embedding.prompt.names", {"a"}); }, "without 'embedding.prompt.texts'"},
      {[](gguf::Writer& w) {
         w.set_string_array("embedding.prompt.names", {"a"});
         w.set_string_array("embedding.prompt.texts", {"x"});
         w.set_string("embedding.prompt.default_name", "b");
       },
       "'embedding.prompt.default_name' is 'b', which is not one of 'embedding.prompt.names'"},
  };
  for (const Case& c : cases) {
    TempFile f(".gguf");
    write_model(f.path, c.edit);
    auto m = Model::load(f.path);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Format);
    CHECK_THAT(m.error().message, Catch::Contains(c.want));
  }
}

TEST_CASE("truncation direction through the API: rows equal the hand-worked token ids", "[api][request]") {
  TempFile f(".gguf");
  write_model(f.path);
  const auto m = load(f.path);
  Context ctx(m, 2);
  // "hello world foo bar" = [CLS] hello world foo bar [SEP]; a limit of 4 keeps [CLS] and [SEP]
  // and two words: the first two (right) or the last two (left).
  const int32_t cls = 2, sep = 3;
  Request r;
  r.max_tokens = 4;
  r.truncate = true;
  for (TruncationDirection dir : {TruncationDirection::Right, TruncationDirection::Left}) {
    r.truncation_direction = dir;
    const std::vector<int32_t> want =
        dir == TruncationDirection::Right ? std::vector<int32_t>{cls, id_of("hello"), id_of("world"), sep}
                                          : std::vector<int32_t>{cls, id_of("foo"), id_of("bar"), sep};
    auto got = ctx.embed({"hello world foo bar"}, r);
    REQUIRE(got.ok());
    CHECK(got.value().n_tokens[0] == 4);
    CHECK_THAT(got.value().warnings.back(), Catch::Contains("1 of 1 texts were longer than 4 tokens"));
    auto ids = ctx.embed_ids({want});
    REQUIRE(ids.ok());
    same_rows(got.value(), ids.value());
    // Token-id input is cut the same way: left keeps the last ids.
    Request cut = r;
    auto from_ids = ctx.embed_ids({{cls, id_of("hello"), id_of("world"), id_of("foo"), id_of("bar"), sep}}, cut);
    REQUIRE(from_ids.ok());
    auto plain_cut = ctx.embed_ids({dir == TruncationDirection::Right
                                        ? std::vector<int32_t>{cls, id_of("hello"), id_of("world"), id_of("foo")}
                                        : std::vector<int32_t>{id_of("world"), id_of("foo"), id_of("bar"), sep}});
    REQUIRE(plain_cut.ok());
    same_rows(from_ids.value(), plain_cut.value());
  }
  r.truncate = false;
  auto too_long = ctx.embed({"a", "hello world foo bar"}, r);
  REQUIRE_FALSE(too_long.ok());
  CHECK(too_long.error().index == 1);
  CHECK(too_long.error().message == "text has 6 tokens, more than the limit of 4 tokens");
  auto bad_id = ctx.embed_ids({{cls, sep}, {cls, 100, sep}});
  REQUIRE_FALSE(bad_id.ok());
  CHECK(bad_id.error().index == 1);
  CHECK_THAT(bad_id.error().message, Catch::Contains("token id 100 is outside the vocabulary"));
}

TEST_CASE("rows of different requests in one forward pass equal each request alone, bit for bit", "[api][request][invariance]") {
  TempFile f(".gguf");
  write_model(f.path);
  const auto m = load(f.path);
  Context ctx(m, 2);
  const std::vector<std::string> texts_a = {"hello world", "foo bar foo bar foo bar", "a"};
  const std::vector<std::string> texts_b = {"foo", "hello world", "b c a b c a b c a b"};
  Request ra, rb;
  ra.dimensions = 8;             // Matryoshka, L2
  rb.normalize = 1;              // L1, full width
  rb.prompt_name = "e5-passage";  // "passage: " (a preset; this model has no prompts)
  const auto alone_a = ctx.embed(texts_a, ra), alone_b = ctx.embed(texts_b, rb);
  REQUIRE(alone_a.ok());
  REQUIRE(alone_b.ok());
  // The scheduler's path: tokenize each request, one forward pass for all, finish per request.
  const ResolvedRequest a = resolve_request(m->describe(), ra, Task::Embed), b = resolve_request(m->describe(), rb, Task::Embed);
  REQUIRE(pass_options(a).pooling == pass_options(b).pooling);
  Tokenized ta = tokenize_texts(*m, a, texts_a), tb = tokenize_texts(*m, b, texts_b);
  std::vector<SequenceInput> mixed;
  for (size_t i = 0; i < 3; i++) {  // interleaved: b0 a0 b1 a1 b2 a2
    mixed.push_back(tb.seqs[i]);
    mixed.push_back(ta.seqs[i]);
  }
  const RunOutput o = ctx.runner().run(mixed, pass_options(a));
  for (size_t i = 0; i < 3; i++) {
    std::vector<float> row_a(8), row_b(static_cast<size_t>(o.cols));
    finish_rows(o.pooled.data() + (2 * i + 1) * o.cols, 1, o.cols, a.finish, row_a.data());
    finish_rows(o.pooled.data() + (2 * i) * o.cols, 1, o.cols, b.finish, row_b.data());
    INFO("input " << i);
    CHECK(std::memcmp(row_a.data(), alone_a.value().row(static_cast<int64_t>(i)), 8 * 4) == 0);
    CHECK(std::memcmp(row_b.data(), alone_b.value().row(static_cast<int64_t>(i)), row_b.size() * 4) == 0);
  }
}

TEST_CASE("plan_batches: token budget and input cap, longest first; rows do not depend on batch_inputs", "[api][request]") {
  std::vector<SequenceInput> seqs;
  for (size_t len : {3, 9, 1, 9, 5}) seqs.push_back(SequenceInput{std::vector<int32_t>(len, 4), {}, {}});
  // Longest first (stable): 1 (9), 3 (9), 4 (5), 0 (3), 2 (1).
  using Plan = std::vector<std::vector<size_t>>;
  CHECK(plan_batches(seqs, 100) == Plan{{1, 3, 4, 0, 2}});
  CHECK(plan_batches(seqs, 18) == Plan{{1, 3}, {4, 0, 2}});
  CHECK(plan_batches(seqs, 100, 2) == Plan{{1, 3}, {4, 0}, {2}});
  CHECK(plan_batches(seqs, 14, 2) == Plan{{1}, {3, 4}, {0, 2}});

  TempFile f(".gguf");
  write_model(f.path);
  Context ctx(load(f.path), 2);
  const std::vector<std::string> texts = {"hello world", "foo bar foo bar foo bar", "a", "b c a b c", "search doc"};
  const auto all = ctx.embed(texts);
  REQUIRE(all.ok());
  for (int64_t cap : {1, 2, 3}) {
    RunSettings s;
    s.batch_inputs = cap;
    size_t passes = 0;
    s.progress = [&](size_t, size_t) { passes++; };
    const auto capped = ctx.embed(texts, {}, s);
    REQUIRE(capped.ok());
    INFO("batch_inputs " << cap);
    CHECK(passes == (texts.size() + static_cast<size_t>(cap) - 1) / static_cast<size_t>(cap));
    same_rows(all.value(), capped.value());
  }
}

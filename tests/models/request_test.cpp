// The request type and the one pipeline: resolve_request's checks and defaults, prompts (model
// metadata > presets, the precedence rule, bad metadata refused at load), truncation direction
// through the API on hand-worked ids, finish_rows on hand-computed values, rows of different
// requests sharing one forward pass bit-identical to each request run alone, and output precision.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "engine/api.h"
#include "engine/executor.h"
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
  CHECK(message(q, Task::Rerank) == "prompt, prompt_name and prompt_template apply to embedding, not to reranking");
  q = {};
  q.pooling = Pooling::Mean;
  CHECK_THAT(message(q, Task::Rerank), Catch::StartsWith("pooling mean does not score pairs"));
  q = {};
  q.precision = Precision::Binary;
  CHECK(message(q, Task::Rerank) == "precision binary applies to embeddings, not to rerank scores");
  TruncationDirection dir;
  CHECK(parse_truncation_direction("Left", &dir));
  CHECK(dir == TruncationDirection::Left);
  CHECK(parse_truncation_direction("right", &dir));
  CHECK(dir == TruncationDirection::Right);
  CHECK_FALSE(parse_truncation_direction("middle", &dir));
}

TEST_CASE("prompts: the model's metadata, then presets, explicit text > name > default > none", "[api][request]") {
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

TEST_CASE("plan_batches: token budget and input cap, longest first, rows do not depend on batch_inputs", "[api][request]") {
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

TEST_CASE("output precision: codes from the API's float rows, and the checks of resolve_request", "[api][request][quantize]") {
  TempFile f(".gguf");
  write_model(f.path);
  const auto m = load(f.path);
  Context ctx(m, 2);
  const std::vector<std::string> texts = {"hello world", "foo bar foo bar", "a", "b c a b c"};
  Request fr;
  fr.dimensions = 12;  // Matryoshka first: 12 dims -> 2 bytes per binary row, the last half padded
  const auto floats = ctx.embed(texts, fr);
  REQUIRE(floats.ok());
  const Embeddings& fe = floats.value();
  // ubinary by hand: bit 7 of byte 0 is dimension 0; dimensions 12..15 of byte 1 are zero.
  Request ub = fr;
  ub.precision = Precision::Ubinary;
  const auto bits = ctx.embed(texts, ub);
  REQUIRE(bits.ok());
  REQUIRE(bits.value().code_bytes == 2);
  CHECK(bits.value().data.empty());
  CHECK(bits.value().cols == 12);
  for (int64_t r = 0; r < fe.rows; r++)
    for (int64_t k = 0; k < 16; k++) {
      const bool bit = (bits.value().code_row(r)[k / 8] >> (7 - k % 8)) & 1;
      INFO("row " << r << " dim " << k);
      CHECK(bit == (k < 12 && fe.row(r)[k] > 0.0f));
    }
  // int8 with ranges from these very rows: each dimension's minimum -> -128, maximum -> 127.
  Request q8 = fr;
  q8.precision = Precision::Int8;
  q8.ranges = std::make_shared<QuantizationRanges>(ranges_from_rows(fe.data.data(), fe.rows, fe.cols));
  const auto codes = ctx.embed(texts, q8);
  REQUIRE(codes.ok());
  for (int64_t k = 0; k < 12; k++) {
    int lo = 127, hi = -128;
    for (int64_t r = 0; r < fe.rows; r++) {
      const int v = static_cast<int8_t>(codes.value().code_row(r)[k]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    INFO("dim " << k);
    CHECK(lo == -128);
    CHECK(hi >= 126);  // (max - min) / step lands on 255 or, rounded down in float32, just under it
  }
  auto message = [&](const Request& q) {
    const auto e = ctx.embed(texts, q);
    return e.ok() ? std::string("(accepted)") : e.error().message;
  };
  Request bad = fr;
  bad.precision = Precision::Uint8;
  CHECK_THAT(message(bad), Catch::StartsWith("precision uint8 needs calibration ranges"));
  bad.ranges = std::make_shared<QuantizationRanges>(ranges_from_rows(fe.data.data(), fe.rows, 8));
  CHECK(message(bad) == "ranges have 8 dimensions but the output has 12 (calibrate with the same dimensions)");
  bad.precision = Precision::Binary;
  CHECK(message(bad) == "ranges apply to precision int8 and uint8, not binary");
  bad = {};
  bad.precision = Precision::Binary;
  bad.pooling = Pooling::None;
  CHECK(message(bad) == "precision binary applies to pooled vectors, not to pooling none");
  TokenBatch batch;
  batch.add(0, {2, 4, 3});
  const auto run = ctx.run(batch, ub);
  REQUIRE_FALSE(run.ok());
  CHECK_THAT(run.error().message, Catch::StartsWith("precision ubinary applies to embed and embed_ids"));
}

TEST_CASE("resolve_request: KV-Embedding defaults and refusals", "[api][request][kv]") {
  ModelDescription d;
  d.path = "m.gguf";
  d.arch = "qwen3";
  d.d_model = d.embedding_dim = 32;
  d.n_ctx = 64;
  d.n_layers = 18;
  d.causal = true;
  d.default_pooling = Pooling::Last;
  auto message = [&](const Request& q, Task t = Task::Embed) {
    try {
      resolve_request(d, q, t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  Request q;
  q.kv_embedding = true;
  ResolvedRequest r = resolve_request(d, q, Task::Embed);
  CHECK(r.pooling == Pooling::Hybrid);  // hybrid, not the model's last-token pooling
  CHECK(r.kv.layer_begin == 6);         // the middle third of 18 layers: 6..11
  CHECK(r.kv.layer_end == 11);
  CHECK(r.kv.bias == 1.0f);
  CHECK_FALSE(resolve_request(d, Request{}, Task::Embed).kv.on());
  q.kv_layers = std::make_pair(13, 17);
  q.kv_bias = 0.5f;
  q.pooling = Pooling::Mean;
  r = resolve_request(d, q, Task::Embed);
  CHECK((r.kv.layer_begin == 13 && r.kv.layer_end == 17 && r.kv.bias == 0.5f && r.pooling == Pooling::Mean));
  q.kv_layers = std::make_pair(13, 18);
  CHECK(message(q) == "kv_layers 13-18 is not a band inside 0-17 for this model");
  q.kv_layers = std::make_pair(5, 4);
  CHECK(message(q) == "kv_layers 5-4 is not a band inside 0-17 for this model");
  q.kv_layers.reset();
  q.pooling = Pooling::Cls;
  CHECK(message(q) == "pooling cls is not defined for kv_embedding (hybrid, mean or last)");
  q.pooling.reset();
  q.kv_bias = std::nanf("");
  CHECK(message(q) == "kv_bias must be a finite number");
  Request plain;
  plain.kv_bias = 1.0f;
  CHECK(message(plain) == "kv_layers and kv_bias apply with kv_embedding");
  // Late chunking pools spans of windows, each window a sequence with its own last token.
  Request lc;
  lc.kv_embedding = true;
  lc.late_chunking = true;
  CHECK(message(lc) == "kv_embedding does not apply to late_chunking: it pools whole texts, late chunking pools chunks");
  lc.late_chunking = false;
  lc.long_inputs = LongInputs::Chunk;  // windows are texts of their own: each re-routes its own last token
  CHECK(resolve_request(d, lc, Task::Embed).kv.on());
  d.n_cls_out = 1;
  Request rr;
  rr.kv_embedding = true;
  CHECK(message(rr, Task::Rerank) == "kv_embedding applies to embeddings, not to reranking");
  d.causal = false;
  d.arch = "bert";
  CHECK(message(rr) == "kv_embedding needs a decoder (causal attention); this bert model is bidirectional already");
  d.n_layers = 2;  // the middle third of 2 layers is layer 0
  d.causal = true;
  CHECK(resolve_request(d, rr, Task::Embed).kv.layer_end == 0);
}

TEST_CASE("prompt templates: the text in the {text} slot, for any pooling, and refusals", "[api][request][template]") {
  TempFile f(".gguf");
  write_model(f.path);
  const auto m = load(f.path);
  Context ctx(m, 2);
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Hybrid}) {
    INFO(pooling_name(p));
    Request t;
    t.pooling = p;
    t.prompt_template = "search: {text} doc";
    Request plain;
    plain.pooling = p;
    const auto a = ctx.embed({"hello world", "foo"}, t), b = ctx.embed({"search: hello world doc", "search: foo doc"}, plain);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    same_rows(a.value(), b.value());
    CHECK(a.value().n_tokens == b.value().n_tokens);
  }
  auto message = [&](const Request& q) {
    const auto e = ctx.embed({"hello"}, q);
    return e.ok() ? std::string("(accepted)") : e.error().message;
  };
  Request q;
  q.prompt_template = "no slot";
  CHECK(message(q) == "prompt_template must contain {text} exactly once: 'no slot'");
  q.prompt_template = "{text} and {text}";
  CHECK(message(q) == "prompt_template must contain {text} exactly once: '{text} and {text}'");
  q.prompt_template = "{text}";
  q.prompt_name = "e5-query";
  CHECK(message(q) == "give either prompt_template or a prompt (prompt, prompt_name), not both");
  ModelDescription d;
  d.n_cls_out = 1;
  d.n_ctx = 8;
  Request rr;
  rr.prompt_template = "{text}";
  CHECK_THROWS_WITH(resolve_request(d, rr, Task::Rerank), "prompt, prompt_name and prompt_template apply to embedding, not to reranking");
}

// RowAssembly, by hand: input 0 has two windows (sequences 0 and 2, weights 3 and 1), input 1 is
// sequence 1 alone. Its rows are (3 * (1, 2) + (5, -2)) / 4 = (2, 1) and (5, 6) (normalize -1: as
// computed), the same bits whatever order the passes ran in: the means are summed in sequence order.
TEST_CASE("RowAssembly: windows' weighted means by hand, the same whatever order the passes ran in", "[api][request]") {
  TempFile f(".gguf");
  write_model(f.path);
  Context ctx(load(f.path), 1);
  Tokenized t;
  t.seqs.resize(3);
  t.parts = {{RowPart{0, 0, 1, 3.0f}}, {RowPart{1, 0, 1, 1.0f}}, {RowPart{0, 0, 1, 1.0f}}};
  t.n_rows = 2;
  t.input_tokens = {40, 5};
  ResolvedRequest r;
  r.finish.normalize = -1;
  auto pooled = [](std::vector<float> row) {
    RunOutput o;
    o.rows = 1;
    o.cols = 2;
    o.pooled = std::move(row);
    o.cu_seqlens = {0, 1};
    return o;
  };
  const std::vector<RunOutput> outs = {pooled({1, 2}), pooled({5, 6}), pooled({5, -2})};
  for (const std::vector<size_t>& order : {std::vector<size_t>{0, 1, 2}, std::vector<size_t>{2, 1, 0}, std::vector<size_t>{1, 2, 0}}) {
    RowAssembly rows(r, t);
    for (size_t s : order) rows.add(s, outs[s], 0);
    const Embeddings e = rows.finish(ctx.runner());
    REQUIRE(e.rows == 2);
    REQUIRE(e.cols == 2);
    CHECK(e.data == std::vector<float>{2, 1, 5, 6});
    CHECK(e.n_tokens == std::vector<int32_t>{40, 5});
  }
  // RowMeans alone: a row without weight stays zero.
  RowMeans m(2, 2);
  const float x[2] = {1, -3};
  m.add(0, x, 0.5);
  m.add(0, x, 1.5);
  CHECK(m.means() == std::vector<float>{1, -3, 0, 0});
}

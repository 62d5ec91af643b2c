// embed's extensions of the embedding routes, end to end: output precision (quantized codes as
// integers and base64 bytes), prompt templates and KV-Embedding, per request and as `embed serve`
// defaults, and the server's --pooling, each answer equal to the `embed` CLI's output with the same
// flags; mixed options in concurrent requests; bad fields and bad startup flags refused with the
// field or flag named.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "tests/server/server_client.h"

using namespace embed::test;

namespace {

// PromptEOL's one-word template (the KV-Embedding paper pairs the two), and it quoted for a shell.
const std::string kTemplate = "This sentence: \"{text}\" means in one word: \"";
const std::string kTemplateFlag = "--template '" + kTemplate + "'";
const std::string kKvFlags = "--kv-embedding --kv-layers 0-1 --kv-bias 2";

// `embed calibrate` ranges of the Qwen fixture's vectors over kTexts, written to a file.
// `embed calibrate` ranges of the Qwen fixture's vectors over kTexts (of `dims` dimensions, 0:
// all), written to a file.
std::string calibrate_qwen(int dims = 0) {
  const std::string path = tmp_path("ranges" + std::to_string(dims) + ".json");
  cli("calibrate " + kQwen + (dims ? " --dims " + std::to_string(dims) : ""), kTexts, " -o " + path + " -t 2");
  return path;
}

// The bytes a quantized row's integers stand for (int8 / binary as two's complement).
std::string code_bytes(const json& ints) {
  std::string b;
  for (const json& v : ints) b += static_cast<char>(static_cast<uint8_t>(v.get<int>()));
  return b;
}

// Each input's "embedding" in the three shapes: OpenAI's data[i].embedding, TEI's rows and
// llama.cpp's [{embedding: [row]}] (which has no dimensions field), for the same fields.
void expect_routes(httplib::Client& c, const json& fields, const std::vector<json>& want) {
  json openai = fields, tei = fields, llama = fields;
  openai["input"] = kTexts;
  tei["inputs"] = kTexts;
  llama["content"] = kTexts;
  const json a = post(c, "/v1/embeddings", openai), b = post(c, "/embed", tei), l = post(c, "/embedding", llama);
  REQUIRE(a.at("data").size() == want.size());
  REQUIRE(b.size() == want.size());
  REQUIRE(l.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO(fields.dump() << " input " << i);
    CHECK(a["data"][i].at("embedding") == want[i]);
    CHECK(b[i] == want[i]);
    if (!fields.contains("dimensions")) CHECK(l[i].at("embedding")[0] == want[i]);
  }
}

// /info names the pooling the embedding routes answer with, in model_type (TEI's place) and in defaults.
void expect_info_pooling(httplib::Client& c, const std::string& pooling) {
  const json i = json::parse(c.Get("/info")->body);
  CHECK(i.at("model_type") == json{{"embedding", {{"pooling", pooling}}}});
  CHECK(i.at("defaults").at("pooling") == pooling);
}

}  // namespace

TEST_CASE("precision: quantized rows on every route equal the CLI's codes, base64 their bytes", "[server]") {
  const std::string ranges = calibrate_qwen();
  ServerProcess s(kQwen, {"--ranges", ranges});
  REQUIRE(s.running());
  auto c = s.client();
  const int64_t dim = json::parse(c.Get("/info")->body).at("embedding_dim");
  REQUIRE(dim == 64);
  for (const std::string p : {"ubinary", "binary", "uint8", "int8"}) {
    const bool ranged = p == "uint8" || p == "int8";
    const std::vector<json> want = cli_json(kQwen, "--precision " + p + (ranged ? " --ranges " + ranges : ""), kTexts);
    REQUIRE(want.size() == kTexts.size());
    REQUIRE(want[0].size() == static_cast<size_t>(ranged ? dim : (dim + 7) / 8));
    REQUIRE(want[0][0].is_number_integer());
    expect_routes(c, {{"precision", p}}, want);
    // base64: the code bytes themselves (not float32s), 4 characters per 3 bytes.
    const json b64 = post(c, "/v1/embeddings", {{"input", kTexts}, {"precision", p}, {"encoding_format", "base64"}});
    for (size_t i = 0; i < kTexts.size(); i++) {
      const std::string text = b64["data"][i].at("embedding");
      CHECK(text.size() == (want[i].size() + 2) / 3 * 4);
      CHECK(base64_decode(text) == code_bytes(want[i]));
    }
  }
  // Matryoshka first, then the bits: 12 dimensions are 2 bytes, base64 "xxx=".
  const std::vector<json> d12 = cli_json(kQwen, "--dims 12 --precision ubinary", kTexts);
  REQUIRE(d12[0].size() == 2);
  expect_routes(c, {{"precision", "ubinary"}, {"dimensions", 12}}, d12);
  const json short64 = post(c, "/v1/embeddings", {{"input", kTexts[1]}, {"precision", "ubinary"}, {"dimensions", 12}, {"encoding_format", "base64"}});
  const std::string t = short64["data"][0].at("embedding");
  CHECK(t.size() == 4);
  CHECK(t.back() == '=');
  CHECK(base64_decode(t) == code_bytes(d12[1]));
  // float32 by name is the default's floats; int8 ranges of the full width do not fit 12 dimensions.
  const std::vector<json> f = cli_json(kQwen, "", kTexts);
  expect_routes(c, {{"precision", "float32"}}, f);
  const json bad = expect_error(c, "/v1/embeddings", R"({"input": "a", "precision": "int8", "dimensions": 12})", 422, "Validation");
  CHECK_THAT(bad.at("error").get<std::string>(), Catch::Contains("ranges have 64 dimensions but the output has 12"));
  // The served OpenAPI document lists the extensions on each embedding route.
  const json doc = json::parse(c.Get("/openapi.json")->body);
  for (const char* path : {"/v1/embeddings", "/embeddings", "/embed", "/embedding"}) {
    const json& props = doc.at("paths").at(path).at("post").at("requestBody").at("content").at("application/json").at("schema").at("properties");
    for (const char* name : {"precision", "prompt_template", "kv_embedding", "kv_layers", "kv_bias"}) {
      INFO(path << " " << name);
      CHECK(props.contains(name));
    }
  }
  CHECK(s.terminate() == 0);
}

TEST_CASE("prompt_template and kv_embedding per request equal the CLI's --template and --kv-*", "[server]") {
  ServerProcess s(kQwen);
  REQUIRE(s.running());
  auto c = s.client();
  const std::vector<json> plain = cli_json(kQwen, "", kTexts);
  const std::vector<json> templ = cli_json(kQwen, kTemplateFlag, kTexts);
  const std::vector<json> kv = cli_json(kQwen, "--kv-embedding", kTexts);
  const std::vector<json> kv_band = cli_json(kQwen, kKvFlags, kTexts);
  const std::vector<json> all = cli_json(kQwen, kKvFlags + " " + kTemplateFlag + " --precision binary", kTexts);
  // Each option changes the vectors (so an option the server dropped would show).
  CHECK(templ[0] != plain[0]);
  CHECK(kv[0] != plain[0]);
  CHECK(kv_band[0] != kv[0]);
  expect_routes(c, json::object(), plain);
  expect_routes(c, {{"prompt_template", kTemplate}}, templ);
  expect_routes(c, {{"kv_embedding", true}}, kv);
  expect_routes(c, {{"kv_embedding", true}, {"kv_layers", {0, 1}}, {"kv_bias", 2}}, kv_band);
  expect_routes(c, {{"kv_embedding", true}, {"kv_layers", {0, 1}}, {"kv_bias", 2.0}, {"prompt_template", kTemplate}, {"precision", "binary"}},
                all);
  // /tokenize shows the template around the text, as the embedding routes read it.
  const std::string filled = "This sentence: \"" + kTexts[0] + "\" means in one word: \"";
  const json with = post(c, "/tokenize", {{"inputs", kTexts[0]}, {"prompt_template", kTemplate}});
  const json literal = post(c, "/tokenize", {{"inputs", filled}});
  REQUIRE(with[0].size() == literal[0].size());
  for (size_t i = 0; i < with[0].size(); i++) CHECK(with[0][i].at("id") == literal[0][i].at("id"));
}

TEST_CASE("serve --precision, --template and --kv-* are defaults every route uses, and a request's own fields win", "[server]") {
  const std::string ranges = calibrate_qwen();
  ServerProcess s(kQwen, {"--precision", "ubinary", "--template", kTemplate, "--kv-embedding", "--kv-layers", "0-1", "--kv-bias", "2",
                          "--ranges", ranges});
  REQUIRE(s.running());
  auto c = s.client();
  const std::string defaults = kKvFlags + " " + kTemplateFlag;
  expect_routes(c, json::object(), cli_json(kQwen, defaults + " --precision ubinary", kTexts));
  // Each default overridden by the request: precision, then the template, then kv_embedding.
  expect_routes(c, {{"precision", "float32"}}, cli_json(kQwen, defaults, kTexts));
  expect_routes(c, {{"precision", "int8"}}, cli_json(kQwen, defaults + " --precision int8 --ranges " + ranges, kTexts));
  expect_routes(c, {{"precision", "float32"}, {"prompt_template", "{text}"}}, cli_json(kQwen, kKvFlags, kTexts));
  expect_routes(c, {{"precision", "float32"}, {"kv_embedding", false}}, cli_json(kQwen, kTemplateFlag, kTexts));
  expect_routes(c, {{"kv_embedding", true}, {"kv_layers", {1, 1}}}, cli_json(kQwen, "--kv-embedding --kv-layers 1-1 --kv-bias 2 --precision ubinary " +
                                                                                         kTemplateFlag, kTexts));
  // A prompt by name replaces the default template (they do not combine).
  const json e5 = post(c, "/embed", {{"inputs", {kTexts[1]}}, {"prompt_name", "e5-query"}});
  CHECK(e5[0] == cli_json(kQwen, kKvFlags + " --precision ubinary --prompt-name e5-query", {kTexts[1]})[0]);
  // /embed_all gives the model's hidden states (float, no KV re-routing), the template around the text.
  const json all = post(c, "/embed_all", {{"inputs", {kTexts[4]}}});
  std::vector<std::vector<float>> got;
  for (const json& t : all[0]) got.push_back(floats(t));
  CHECK(got == cli_rows(kQwen, "--pooling none --normalize -1 " + kTemplateFlag, {kTexts[4]}));
  // ... and refuses them when asked for by name.
  expect_error(c, "/embed_all", R"({"inputs": "a", "precision": "binary"})", 422, "Validation", "precision");
  expect_error(c, "/embed_all", R"({"inputs": "a", "kv_embedding": true})", 422, "Validation");
  CHECK(s.terminate() == 0);
}

TEST_CASE("GET /info reports the server's defaults, each as the flag it was started with, and requests get them", "[server]") {
  const std::string ranges = calibrate_qwen();
  ServerProcess s(kQwen, {"--precision", "ubinary", "--ranges", ranges, "--template", kTemplate, "--kv-embedding", "--kv-layers", "0-1",
                          "--kv-bias", "2", "--max-input-tokens", "24", "--auto-truncate", "--split-special", "--max-batch-tokens", "4096",
                          "--max-client-batch-size", "8", "--max-concurrent-requests", "20", "--http-threads", "3", "--payload-limit",
                          "100000", "--model-name", "served"});
  REQUIRE(s.running());
  auto c = s.client();
  const json i = json::parse(c.Get("/info")->body);
  CHECK(i.at("model_id") == "served");
  CHECK(i.at("model_dtype") == "float32");
  CHECK(i.at("model_type") == json{{"embedding", {{"pooling", "hybrid"}}}});  // --kv-embedding pools hybrid
  CHECK(i.at("embedding_dim") == 64);
  CHECK(i.at("max_input_length") == 24);
  CHECK(i.at("max_batch_tokens") == 4096);
  CHECK(i.at("max_batch_requests").is_null());
  CHECK(i.at("max_client_batch_size") == 8);
  CHECK(i.at("max_concurrent_requests") == 20);
  CHECK(i.at("payload_limit") == 100000);
  CHECK(i.at("auto_truncate") == true);
  CHECK(i.at("tokenization_workers") == 3);
  const json want = {{"pooling", "hybrid"},         {"truncate", true},        {"truncation_direction", "Right"},
                     {"split_special", true},       {"precision", "ubinary"},  {"ranges_dimensions", 64},
                     {"prompt_template", kTemplate}, {"kv_embedding", true},    {"kv_layers", {0, 1}},
                     {"kv_bias", 2.0}};
  CHECK(i.at("defaults") == want);
  // A request that sends the reported defaults as its own fields gets what one that sends none gets,
  // and that is the CLI's output with the same flags (a long text cut to 24 tokens: --auto-truncate).
  std::string long_text;
  for (int k = 0; k < 60; k++) long_text += "word" + std::to_string(k % 7) + " ";
  const std::vector<std::string> texts = {kTexts[0], long_text};
  const json plain = post(c, "/embed", {{"inputs", texts}});
  json fields = {{"inputs", texts}, {"truncate", true}, {"truncation_direction", "Right"}};
  for (const char* name : {"precision", "prompt_template", "kv_embedding", "kv_layers", "kv_bias"}) fields[name] = want.at(name);
  CHECK(post(c, "/embed", fields) == plain);
  const std::vector<json> cli = cli_json(kQwen, kKvFlags + " " + kTemplateFlag + " --precision ubinary --split-special --max-tokens 24 --truncate", texts);
  REQUIRE(plain.size() == 2);
  CHECK(plain[0] == cli[0]);
  CHECK(plain[1] == cli[1]);
  CHECK(s.terminate() == 0);

  // No flags: the model's own defaults, and nulls where nothing is set.
  ServerProcess bare(kQwen);
  REQUIRE(bare.running());
  auto cb = bare.client();
  const json b = json::parse(cb.Get("/info")->body);
  CHECK(b.at("model_id") == "model");
  CHECK(b.at("model_type") == json{{"embedding", {{"pooling", "last"}}}});
  CHECK(b.at("max_batch_tokens") == 16384);
  CHECK(b.at("max_client_batch_size") == 32);
  CHECK(b.at("max_concurrent_requests") == 512);
  CHECK(b.at("payload_limit") == 2000000);
  CHECK(b.at("auto_truncate") == false);
  CHECK(b.at("tokenization_workers") == 2);
  CHECK(b.at("defaults") == json{{"pooling", "last"},
                                 {"truncate", false},
                                 {"truncation_direction", "Right"},
                                 {"split_special", false},
                                 {"precision", "float32"},
                                 {"ranges_dimensions", nullptr},
                                 {"prompt_template", nullptr},
                                 {"kv_embedding", false},
                                 {"kv_layers", nullptr},
                                 {"kv_bias", nullptr}});
  // --kv-embedding alone: the band the model resolves to (the middle third of 3 layers: 1-1) and bias 1.
  ServerProcess kv(kQwen, {"--kv-embedding"});
  REQUIRE(kv.running());
  const json k = json::parse(kv.client().Get("/info")->body).at("defaults");
  CHECK(k.at("pooling") == "hybrid");
  CHECK(k.at("kv_layers") == json{1, 1});
  CHECK(k.at("kv_bias") == 1.0);
  // A reranker: rank pooling, and none of the embedding routes' defaults.
  ServerProcess rerank(kRerank, {"--max-input-tokens", "40", "--auto-truncate"});
  REQUIRE(rerank.running());
  const json r = json::parse(rerank.client().Get("/info")->body);
  CHECK(r.at("model_type").contains("reranker"));
  CHECK(r.at("max_input_length") == 40);
  CHECK(r.at("defaults") == json{{"pooling", "rank"}, {"truncate", true}, {"truncation_direction", "Right"}, {"split_special", false}});
}

TEST_CASE("mixed precision, template and kv_embedding in concurrent requests: each gets its own rows", "[server]") {
  const std::string ranges = calibrate_qwen();
  ServerProcess s(kQwen, {"--ranges", ranges});
  REQUIRE(s.running());
  const std::vector<json> variants = {json::object(),
                                      {{"precision", "ubinary"}},
                                      {{"precision", "int8"}},
                                      {{"dimensions", 12}, {"precision", "binary"}},
                                      {{"prompt_template", kTemplate}},
                                      {{"kv_embedding", true}},
                                      {{"kv_embedding", true}, {"kv_layers", {0, 1}}, {"kv_bias", 2}},
                                      {{"kv_embedding", true}, {"prompt_template", kTemplate}, {"precision", "uint8"}}};
  // Solo answers, one text per request; each variant's checked against the CLI for one text.
  std::vector<std::vector<json>> solo(variants.size());
  {
    auto c = s.client();
    for (size_t v = 0; v < variants.size(); v++)
      for (const std::string& t : kTexts) {
        json body = variants[v];
        body["input"] = t;
        solo[v].push_back(post(c, "/v1/embeddings", body)["data"][0].at("embedding"));
      }
    CHECK(solo[2][3] == cli_json(kQwen, "--precision int8 --ranges " + ranges, {kTexts[3]})[0]);
    CHECK(solo[3][2] == cli_json(kQwen, "--dims 12 --precision binary", {kTexts[2]})[0]);
    CHECK(solo[6][5] == cli_json(kQwen, kKvFlags, {kTexts[5]})[0]);
    CHECK(solo[7][0] == cli_json(kQwen, "--kv-embedding --precision uint8 --ranges " + ranges + " " + kTemplateFlag, {kTexts[0]})[0]);
  }
  std::atomic<int> checked{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; t++)
    clients.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(100 + t));
      auto c = s.client();
      for (int k = 0; k < 15; k++) {
        const size_t v = rng() % variants.size();
        std::vector<size_t> pick;
        for (size_t n = 1 + rng() % 6; pick.size() < n;) pick.push_back(rng() % kTexts.size());
        json body = variants[v];
        body["input"] = json::array();
        for (size_t i : pick) body["input"].push_back(kTexts[i]);
        auto r = c.Post("/v1/embeddings", body.dump(), "application/json");
        if (!r || r->status != 200) {
          WARN("request failed: " << (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error())));
          wrong++;
          continue;
        }
        const json j = json::parse(r->body).at("data");
        for (size_t q = 0; q < pick.size(); q++) {
          checked++;
          if (q >= j.size() || j[q].at("embedding") != solo[v][pick[q]]) wrong++;
        }
      }
    });
  for (std::thread& th : clients) th.join();
  CHECK(wrong == 0);
  CHECK(checked > 100);
}

TEST_CASE("bad extension fields are 422 naming the field, bad startup flags refuse to start naming the flag or file", "[server]") {
  ServerProcess s(kQwen);
  REQUIRE(s.running());
  auto c = s.client();
  for (const char* path : {"/v1/embeddings", "/embed", "/embedding"}) {
    const std::string in = std::string(path) == "/v1/embeddings" ? "input" : std::string(path) == "/embed" ? "inputs" : "content";
    auto body = [&](const std::string& fields) { return "{\"" + in + "\": \"a\", " + fields + "}"; };
    INFO(path);
    expect_error(c, path, body(R"("precision": "int4")"), 422, "Validation", "precision");
    expect_error(c, path, body(R"("precision": 8)"), 422, "Validation", "precision");
    const json j = expect_error(c, path, body(R"("precision": "int8")"), 422, "Validation", "precision");
    CHECK(j.at("error") == "precision int8 needs calibration ranges: start the server with --ranges FILE (embed calibrate)");
    expect_error(c, path, body(R"("precision": "uint8")"), 422, "Validation", "precision");
    expect_error(c, path, body(R"("prompt_template": 5)"), 422, "Validation", "prompt_template");
    expect_error(c, path, body(R"("prompt_template": "no slot")"), 422, "Validation", "prompt_template");
    expect_error(c, path, body(R"("prompt_template": "{text} and {text}")"), 422, "Validation", "prompt_template");
    expect_error(c, path, body(R"("kv_embedding": "yes")"), 422, "Validation", "kv_embedding");
    for (const char* layers : {R"("0-1")", "[0]", "[0, 1, 1]", R"([0, "1"])", "[-1, 0]", "[0, 1.5]", "[0, 4294967296]"})
      expect_error(c, path, body(R"("kv_embedding": true, "kv_layers": )" + std::string(layers)), 422, "Validation", "kv_layers");
    const json band = expect_error(c, path, body(R"("kv_embedding": true, "kv_layers": [1, 5])"), 422, "Validation", "kv_layers");
    CHECK_THAT(band.at("error").get<std::string>(), Catch::Contains("is not a band inside 0-2"));
    expect_error(c, path, body(R"("kv_embedding": true, "kv_layers": [1, 0])"), 422, "Validation", "kv_layers");
    expect_error(c, path, body(R"("kv_layers": [0, 1])"), 422, "Validation", "kv_layers");  // without kv_embedding
    expect_error(c, path, body(R"("kv_embedding": true, "kv_bias": "x")"), 422, "Validation", "kv_bias");
    expect_error(c, path, body(R"("kv_embedding": true, "kv_bias": 1e300)"), 422, "Validation", "kv_bias");
  }
  expect_error(c, "/embed", R"({"inputs": "a", "prompt_name": "e5-query", "prompt_template": "q: {text}"})", 422, "Validation");
  expect_error(c, "/tokenize", R"({"inputs": "a", "prompt_template": "no slot"})", 422, "Validation", "prompt_template");
  CHECK(c.Get("/health")->status == 200);

  // An encoder refuses KV-Embedding with the engine's reason.
  ServerProcess bert(kBert);
  REQUIRE(bert.running());
  auto cb = bert.client();
  const json enc = expect_error(cb, "/v1/embeddings", R"({"input": "a", "kv_embedding": true})", 422, "Validation", "kv_embedding");
  CHECK_THAT(enc.at("error").get<std::string>(), Catch::Contains("kv_embedding needs a decoder"));

  // Startup: each bad flag or file is named, before any request.
  struct Refusal {
    std::vector<std::string> args;
    const std::string& model;
    int exit_code;
    std::string says;
  };
  const std::string bad_ranges = tmp_path("bad_ranges.json");
  std::ofstream(bad_ranges) << "{\"embed_quantization_ranges\": 1, \"min\": [0.5]}";
  const std::string ranges12 = calibrate_qwen(12);
  const std::vector<Refusal> refusals = {
      {{"--ranges", "/nonexistent/ranges.json"}, kQwen, 4, "/nonexistent/ranges.json: cannot read"},
      {{"--ranges", bad_ranges}, kQwen, 1, bad_ranges},
      {{"--precision", "int4"}, kQwen, 2, "unknown --precision 'int4'"},
      {{"--precision", "int8"}, kQwen, 2, "--precision int8 needs calibration ranges: give --ranges"},
      {{"--precision", "int8", "--ranges", ranges12}, kQwen, 2, "--ranges have 12 dimensions but the output has 64"},
      {{"--kv-embedding"}, kBert, 2, "--kv-embedding needs a decoder"},
      {{"--kv-embedding", "--kv-layers", "0-9"}, kQwen, 2, "--kv-layers 0-9 is not a band"},
      {{"--kv-embedding", "--kv-layers", "one"}, kQwen, 2, "--kv-layers 'one' is not a band A-B"},
      {{"--kv-embedding", "--kv-bias", "x"}, kQwen, 2, "--kv-bias 'x' is not a number"},
      {{"--kv-bias", "2"}, kQwen, 2, "--kv-layers and --kv-bias apply with --kv-embedding"},
      {{"--template", "no slot"}, kQwen, 2, "--template must contain {text} exactly once"},
      {{"--precision", "binary"}, kRerank, 2, "this model is a reranker"},
      {{"--ranges", ranges12}, kRerank, 2, "--ranges " + ranges12 + ": ranges quantize embeddings, and this model is a reranker"},
  };
  for (const Refusal& r : refusals) {
    ServerProcess refused(r.model, r.args);
    INFO(r.args[0] << " " << (r.args.size() > 1 ? r.args[1] : "") << ": " << refused.log());
    CHECK_FALSE(refused.running());
    CHECK(refused.exit_code() == r.exit_code);
    CHECK_THAT(refused.log(), Catch::Contains(r.says));
  }
  // A ranges file of a Matryoshka width serves int8 at that width (and only there).
  ServerProcess narrow(kQwen, {"--ranges", ranges12});
  REQUIRE(narrow.running());
  auto cn = narrow.client();
  const json n = post(cn, "/v1/embeddings", {{"input", kTexts[0]}, {"precision", "int8"}, {"dimensions", 12}});
  CHECK(n["data"][0].at("embedding") == cli_json(kQwen, "--dims 12 --precision int8 --ranges " + ranges12, {kTexts[0]})[0]);
  expect_error(cn, "/v1/embeddings", R"({"input": "a", "precision": "int8"})", 422, "Validation");
}

// --pooling: the embedding routes' pooling, as TEI's and llama-server's --pooling (a server
// default with no request field), by the `embed` command's names; every row equals the CLI's with
// the same --pooling.
TEST_CASE("serve --pooling sets the embedding routes' pooling: rows equal the CLI's --pooling, none answers per token", "[server]") {
  // A decoder served with mean pooling (its own is last).
  const std::vector<json> mean = cli_json(kQwen, "--pooling mean", kTexts);
  const std::vector<json> last = cli_json(kQwen, "", kTexts);
  REQUIRE(mean.size() == kTexts.size());
  CHECK(mean[0] != last[0]);  // so a server that ignored --pooling would show
  {
    ServerProcess s(kQwen, {"--pooling", "mean"});
    REQUIRE(s.running());
    auto c = s.client();
    expect_info_pooling(c, "mean");
    const json openai = post(c, "/v1/embeddings", {{"input", kTexts}});
    const auto want = cli_rows(kQwen, "--pooling mean", kTexts);
    REQUIRE(openai.at("data").size() == want.size());
    for (size_t k = 0; k < want.size(); k++) CHECK(floats(openai["data"][k].at("embedding")) == want[k]);
    expect_routes(c, json::object(), mean);
    expect_routes(c, {{"dimensions", 12}}, cli_json(kQwen, "--pooling mean --dims 12", kTexts));
    // KV-Embedding keeps a pooling it defines (mean), as the CLI's --pooling mean --kv-embedding.
    expect_routes(c, {{"kv_embedding", true}}, cli_json(kQwen, "--pooling mean --kv-embedding", kTexts));
    // /embed_all stays per token: the hidden states, whatever --pooling says.
    const json all = post(c, "/embed_all", {{"inputs", {kTexts[4]}}});
    std::vector<std::vector<float>> got;
    for (const json& t : all[0]) got.push_back(floats(t));
    CHECK(got == cli_rows(kQwen, "--pooling none --normalize -1", {kTexts[4]}));
    CHECK(s.terminate() == 0);
  }
  // Per-token vectors: /embed_all and /embedding answer them (the hidden states, un-normalized,
  // as llama-server), the routes that promise one vector per input answer 400 naming the flag.
  {
    ServerProcess s(kQwen, {"--pooling", "none"});
    REQUIRE(s.running());
    auto c = s.client();
    expect_info_pooling(c, "none");
    const std::vector<std::string> texts = {kTexts[0], kTexts[4]};
    const auto hidden = cli_rows(kQwen, "--pooling none --normalize -1", texts);
    const json all = post(c, "/embed_all", {{"inputs", texts}});
    const json llama = post(c, "/embedding", {{"content", texts}});
    std::vector<std::vector<float>> from_all, from_llama;
    for (const json& text : all)
      for (const json& t : text) from_all.push_back(floats(t));
    for (const json& text : llama)
      for (const json& t : text.at("embedding")) from_llama.push_back(floats(t));
    REQUIRE(hidden.size() > 2);
    CHECK(from_all == hidden);
    CHECK(from_llama == hidden);
    for (const char* path : {"/v1/embeddings", "/embeddings"}) {
      const json e = expect_error(c, path, json{{"input", texts}}.dump(), 400, "Validation");
      CHECK(e.at("error") == "this server's pooling is none (--pooling none: one vector per token), and " + std::string(path) +
                                 " answers one vector per input: use /embed_all (TEI) or /embedding (llama.cpp) for per-token vectors, "
                                 "or send kv_embedding: true on a decoder (hybrid pooling)");
    }
    const json tei = expect_error(c, "/embed", json{{"inputs", texts}}.dump(), 400, "Validation");
    CHECK_THAT(tei.at("error").get<std::string>(), Catch::Contains("(--pooling none: one vector per token), and /embed answers"));
    // As the refusal says: kv_embedding pools (hybrid, KV-Embedding's own), as the CLI's --kv-embedding.
    expect_routes(c, {{"kv_embedding", true}}, cli_json(kQwen, "--kv-embedding", kTexts));
    expect_error(c, "/embed_all", R"({"inputs": "a", "kv_embedding": true})", 422, "Validation");
    expect_error(c, "/embedding", R"({"content": "a", "precision": "binary"})", 422, "Validation", "precision");
    CHECK(s.terminate() == 0);
  }
  // An encoder with a rank head served with cls pooling: the embedding routes pool cls, the rerank
  // routes still score with the head (the CLI's rerank scores).
  {
    ServerProcess s(kBert, {"--pooling", "cls"});
    REQUIRE(s.running());
    auto c = s.client();
    const std::vector<json> cls = cli_json(kBert, "--pooling cls", kTexts);
    CHECK(cls[0] != cli_json(kBert, "", {kTexts[0]})[0]);
    expect_routes(c, json::object(), cls);
    const std::vector<std::string> docs = {"The cat sat on the mat.", "Stocks fell sharply."};
    std::istringstream in(cli("rerank " + kBert + " --query 'Where is the cat?' -f jsonl", docs));
    std::map<size_t, float> want;
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      want[j.at("index")] = j.at("relevance_score");
    }
    const json r = post(c, "/rerank", {{"query", "Where is the cat?"}, {"texts", docs}, {"raw_scores", true}});
    REQUIRE(r.size() == 2);
    for (const json& x : r) CHECK(x.at("score").get<float>() == want.at(x.at("index")));
    CHECK(s.terminate() == 0);
  }
  // Startup: a bad value, rank, a reranker and combinations the engine refuses, each named.
  struct Refusal {
    std::vector<std::string> args;
    const std::string& model;
    std::string says;
  };
  const std::vector<Refusal> refusals = {
      {{"--pooling", "max"}, kQwen, "unknown --pooling 'max' (none, mean, cls, last, hybrid, rank)"},
      {{"--pooling", "rank"}, kBert, "--pooling rank: rank pooling scores (query, document) pairs"},
      {{"--pooling", "rank"}, kQwen, "--pooling rank: rank pooling scores (query, document) pairs"},
      {{"--pooling", "mean"}, kRerank, "--pooling: the embedding routes' defaults, and this model is a reranker (rank pooling)"},
      {{"--pooling", "none", "--kv-embedding"}, kQwen, "--pooling none is not defined for --kv-embedding"},
      {{"--pooling", "cls", "--kv-embedding"}, kQwen, "--pooling cls is not defined for --kv-embedding"},
      {{"--pooling", "none", "--precision", "binary"}, kQwen, "--precision binary applies to pooled vectors, not to --pooling none"},
  };
  for (const Refusal& r : refusals) {
    ServerProcess refused(r.model, r.args);
    INFO(r.args[0] << " " << r.args[1] << ": " << refused.log());
    CHECK_FALSE(refused.running());
    CHECK(refused.exit_code() == 2);  // a bad flag value or combination is a usage error
    CHECK_THAT(refused.log(), Catch::Contains(r.says));
  }
  // cls on a decoder starts, with the CLI's warning.
  ServerProcess cls(kQwen, {"--pooling", "cls"});
  REQUIRE(cls.running());
  CHECK_THAT(cls.log(), Catch::Contains("warning: --pooling cls on a causal model"));
  CHECK(json::parse(cls.client().Get("/info")->body).at("defaults").at("pooling") == "cls");
}

// Ollama's API on `embed serve` (tools/server/api_ollama.cpp), on loopback: /api/embed's vectors
// equal the `embed` CLI's for the same texts and flags bit for bit, /api/embeddings' the CLI's
// unnormalized ones, the model listings describe the served GGUF, and every error answers
// Ollama's {"error": "..."} body with Ollama's status. The official ollama client and LangChain's
// OllamaEmbeddings are driven by tests/server/test_ollama_clients.py.
#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/server/server_client.h"

using namespace embed::test;

namespace {

// An Ollama error: the status and a body that is {"error": message} and nothing else.
std::string ollama_error(httplib::Client& c, const std::string& path, const std::string& body, int status) {
  auto r = c.Post(path.c_str(), body, "application/json");
  REQUIRE(r);
  INFO(path << " " << body.substr(0, 120) << " -> " << r->status << " " << r->body);
  CHECK(r->status == status);
  const json j = json::parse(r->body);
  REQUIRE(j.is_object());
  CHECK(j.size() == 1);
  REQUIRE(j.contains("error"));
  return j.at("error").get<std::string>();
}

std::vector<std::vector<float>> rows(const json& a) {
  std::vector<std::vector<float>> out;
  for (const json& r : a) out.push_back(floats(r));
  return out;
}

}  // namespace

TEST_CASE("ollama /api/embed and /api/embeddings answer the CLI's vectors bit for bit", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  auto c = s.client();
  const json texts = kTexts;
  // The served name is the file's stem, "model"; Ollama's tag "latest" and any case name it too.
  const auto want = cli_rows(kBert, "", kTexts);
  for (const char* name : {"model", "model:latest", "MODEL:Latest"}) {
    const json j = post(c, "/api/embed", {{"model", name}, {"input", texts}});
    CHECK(j.at("model") == name);
    CHECK(rows(j.at("embeddings")) == want);
    CHECK(j.at("total_duration").get<int64_t>() > 0);
    // prompt_eval_count: every input's tokens, as /tokenize counts them (with [CLS] and [SEP]).
    size_t tokens = 0;
    for (const json& t : post(c, "/tokenize", {{"inputs", texts}})) tokens += t.size();
    CHECK(j.at("prompt_eval_count") == tokens);
  }
  // One string is one input.
  CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", kTexts[3]}}).at("embeddings")) == std::vector<std::vector<float>>{want[3]});
  // dimensions: 0 < k < width cuts and re-normalizes (the CLI's --dims); 0 and the width or more: the full vector.
  const auto dims8 = cli_rows(kBert, "--dims 8", kTexts);
  CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", texts}, {"dimensions", 8}}).at("embeddings")) == dims8);
  for (int k : {0, 1000000})
    CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", texts}, {"dimensions", k}}).at("embeddings")) == want);
  // truncate defaults to true (Ollama's default); options.num_ctx is the context inputs are cut to.
  std::string long_text;
  for (int i = 0; i < 200; i++) long_text += "word" + std::to_string(i % 7) + " ";
  const auto cut = cli_rows(kBert, "--truncate", {long_text});
  CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", long_text}}).at("embeddings")) == cut);
  CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", long_text}, {"truncate", true}}).at("embeddings")) == cut);
  const auto ctx16 = cli_rows(kBert, "--truncate --max-tokens 16", {long_text, kTexts[0]});
  const json small_ctx = post(c, "/api/embed", {{"model", "model"}, {"input", {long_text, kTexts[0]}}, {"options", {{"num_ctx", 16}, {"temperature", 0.5}}}});
  CHECK(rows(small_ctx.at("embeddings")) == ctx16);
  CHECK(small_ctx.at("prompt_eval_count") == 16 + post(c, "/tokenize", {{"inputs", kTexts[0]}})[0].size());
  // keep_alive is accepted in both of Ollama's spellings.
  for (const json& k : {json("5m"), json("1h30m"), json("0"), json("-1s"), json(300), json(-1)})
    CHECK(rows(post(c, "/api/embed", {{"model", "model"}, {"input", kTexts[0]}, {"keep_alive", k}}).at("embeddings"))[0] == want[0]);
  // Nothing to embed: Ollama loads the model and answers no embeddings.
  for (const json& nothing : {json(""), json::array(), json(nullptr)}) {
    json body = {{"model", "model"}};
    if (!nothing.is_null()) body["input"] = nothing;
    const json j = post(c, "/api/embed", body);
    CHECK(j == json{{"model", "model"}, {"embeddings", json::array()}});
  }
  // The older route: one prompt, the vector as the model makes it (not normalized).
  const auto raw = cli_rows(kBert, "--normalize -1", {kTexts[1]});
  const json legacy = post(c, "/api/embeddings", {{"model", "model:latest"}, {"prompt", kTexts[1]}, {"keep_alive", "5m"}});
  CHECK(legacy.size() == 1);
  CHECK(floats(legacy.at("embedding")) == raw[0]);
  CHECK(post(c, "/api/embeddings", {{"model", "model"}, {"prompt", ""}}) == json{{"embedding", json::array()}});
  CHECK(s.terminate() == 0);
}

TEST_CASE("ollama errors: Ollama's status codes and {\"error\"} body", "[server]") {
  ServerProcess s(kBert, {"--max-client-batch-size", "4"});
  REQUIRE(s.running());
  auto c = s.client();
  CHECK(ollama_error(c, "/api/embed", R"({"input": "a"})", 400) == "model is required");
  CHECK(ollama_error(c, "/api/embeddings", R"({"model": "", "prompt": "a"})", 400) == "model is required");
  // "name" is /api/show's older spelling only: Ollama's embed routes read "model" (a fuzzer found this one answered).
  CHECK(ollama_error(c, "/api/embed", R"({"name": "model", "input": "a"})", 400) == "model is required");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "nomic-embed-text", "input": "a"})", 404) ==
        "model 'nomic-embed-text' not found (this server serves 'model:latest')");
  CHECK(ollama_error(c, "/api/show", R"({"model": "model:v2"})", 404) == "model 'model:v2' not found (this server serves 'model:latest')");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": [1, 2]})", 400) == "invalid input type");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": ["a", ["b"]]})", 400) == "invalid input type");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": {"text": "a"}})", 400) == "invalid input type");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": ["a", ""]})", 400) == "input[1] is an empty string");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": ["a", "b", "c", "d", "e"]})", 400) ==
        "input has 5 texts, more than the server's limit of 4 (--max-client-batch-size)");
  CHECK(ollama_error(c, "/api/embeddings", R"({"model": "model", "prompt": ["a"]})", 400) == "prompt must be a string");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": "a", "dimensions": -3})", 400) == "dimensions must not be negative");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": "a", "truncate": "yes"})", 400) == "field 'truncate' must be true or false");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": "a", "options": [1]})", 400) == "options must be an object");
  CHECK(ollama_error(c, "/api/embed", R"({"model": "model", "input": "a", "options": {"num_ctx": 0}})", 400) ==
        "options.num_ctx must be at least 1");
  for (const char* k : {R"("5 minutes")", R"("5")", R"("m")", R"("")", R"(true)"})
    CHECK_THAT(ollama_error(c, "/api/embed", std::string(R"({"model": "model", "input": "a", "keep_alive": )") + k + "}", 400),
               Catch::Contains("keep_alive"));
  // Too long with truncate false: 400 naming the input (Ollama: "the input length exceeds the context length").
  std::string long_text;
  for (int i = 0; i < 200; i++) long_text += "word ";
  CHECK_THAT(ollama_error(c, "/api/embed", json{{"model", "model"}, {"input", {"a", long_text}}, {"truncate", false}}.dump(), 400),
             Catch::StartsWith("input[1]: ") && Catch::Contains("send truncate: true"));
  // Not JSON, not an object, the wrong method: Ollama's body too.
  CHECK_THAT(ollama_error(c, "/api/embed", "{not json", 400), Catch::StartsWith("the body is not valid JSON"));
  CHECK(ollama_error(c, "/api/embed", "[]", 400) == "the body must be a JSON object");
  auto get = c.Get("/api/embed");
  REQUIRE(get);
  CHECK(get->status == 405);
  CHECK(json::parse(get->body) == json{{"error", "GET is not allowed on /api/embed (allowed: POST)"}});
  auto post_tags = c.Post("/api/tags", "{}", "application/json");
  REQUIRE(post_tags);
  CHECK(post_tags->status == 405);
  // The other routes keep TEI's body.
  expect_error(c, "/embed", R"({"inputs": [1.5]})", 422, "Validation");
  CHECK(s.terminate() == 0);

  ServerProcess rerank(kRerank);
  REQUIRE(rerank.running());
  auto rc = rerank.client();
  CHECK(ollama_error(rc, "/api/embed", R"({"model": "model", "input": "a"})", 400) ==
        "\"model\" does not support embeddings (it is a reranker: use /rerank or /v1/rerank)");
  const json show = post(rc, "/api/show", {{"model", "model"}});
  CHECK(show.at("capabilities") == json::array());
}

TEST_CASE("ollama /api/tags, /api/show, /api/ps and /api/version describe the served GGUF", "[server]") {
  ServerProcess s(kBert, {"--max-input-tokens", "64"});
  REQUIRE(s.running());
  auto c = s.client();
  const json info = json::parse(c.Get("/info")->body);
  auto tags_r = c.Get("/api/tags");
  REQUIRE(tags_r);
  REQUIRE(tags_r->status == 200);
  const json tags = json::parse(tags_r->body);
  REQUIRE(tags.at("models").size() == 1);
  const json& m = tags["models"][0];
  CHECK(m.at("name") == "model:latest");
  CHECK(m.at("model") == "model:latest");
  CHECK(m.at("size") == std::filesystem::file_size(kBert));
  CHECK(m.at("digest").get<std::string>().size() == 64);  // its value: test_ollama_clients.py against hashlib
  CHECK(m.at("modified_at").get<std::string>().size() == 20);  // RFC 3339, UTC: 2026-01-02T03:04:05Z
  const json& d = m.at("details");
  CHECK(d.at("format") == "gguf");
  CHECK(d.at("family") == "bert");
  CHECK(d.at("families") == json::array({"bert"}));
  // The fixture's tensors are f32 (embed info), and it has well under a million parameters.
  CHECK(d.at("quantization_level") == "F32");
  CHECK(d.at("parameter_size").get<std::string>().back() == 'K');
  // HEAD answers too (Ollama's clients probe with it).
  auto head = c.Head("/api/tags");
  REQUIRE(head);
  CHECK(head->status == 200);

  const json ps = json::parse(c.Get("/api/ps")->body);
  REQUIRE(ps.at("models").size() == 1);
  CHECK(ps["models"][0].at("name") == "model:latest");
  CHECK(ps["models"][0].at("digest") == m.at("digest"));
  CHECK(ps["models"][0].at("context_length") == 64);
  CHECK(ps["models"][0].at("size_vram") == 0);
  CHECK(ps["models"][0].contains("expires_at"));

  for (const char* key : {"model", "name"}) {
    const json show = post(c, "/api/show", {{key, "model"}});
    CHECK(show.at("details") == d);
    CHECK(show.at("capabilities") == json::array({"embedding"}));
    const json& mi = show.at("model_info");
    CHECK(mi.at("general.architecture") == "bert");
    CHECK(mi.at("bert.embedding_length") == info.at("embedding_dim"));
    CHECK(mi.at("tokenizer.ggml.tokens") == json::array());  // arrays only with verbose, as Ollama
    CHECK_FALSE(show.contains("tensors"));
  }
  const json verbose = post(c, "/api/show", {{"model", "model"}, {"verbose", true}});
  CHECK(verbose.at("model_info").at("tokenizer.ggml.tokens").size() > 3);
  CHECK(verbose.at("tensors").size() > 3);
  CHECK(verbose.at("tensors")[0].at("shape").is_array());

  auto version = c.Get("/api/version");
  REQUIRE(version);
  CHECK(json::parse(version->body) == json{{"version", EMBED_PROJECT_VERSION}});
  const json doc = json::parse(c.Get("/openapi.json")->body);
  for (const char* path : {"/api/embed", "/api/embeddings", "/api/show", "/api/tags", "/api/ps", "/api/version"})
    CHECK(doc.at("paths").contains(path));
  CHECK(s.terminate() == 0);
}

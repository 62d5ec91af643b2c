// `embed serve` end to end, on loopback, through cpp-httplib's client: every route's answer
// equals the `embed` CLI's output for the same text (bit for bit), every error code, concurrent
// clients with overlapping inputs (never crossed, equal to solo runs), slow and vanishing
// clients, thousands of malformed bodies, SIGTERM draining. Committed tiny models only.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cmath>
#include <map>
#include <random>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/server/server_client.h"

using namespace embed::test;

TEST_CASE("every embedding route answers the CLI's vectors bit for bit", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  auto c = s.client();
  const auto want = cli_rows(kBert, "", kTexts);
  const json inputs = kTexts;
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    const json j = post(c, path, {{"input", inputs}, {"model", "x"}});
    CHECK(j.at("object") == "list");
    REQUIRE(j.at("data").size() == kTexts.size());
    for (size_t i = 0; i < kTexts.size(); i++) {
      CHECK(j["data"][i].at("object") == "embedding");
      CHECK(j["data"][i].at("index") == i);
      CHECK(floats(j["data"][i].at("embedding")) == want[i]);
    }
    CHECK(j.at("model") == "model");
    CHECK(j.at("usage").at("prompt_tokens").get<int>() > 0);
  }
  const json b64 = post(c, "/v1/embeddings", {{"input", inputs}, {"encoding_format", "base64"}});
  for (size_t i = 0; i < kTexts.size(); i++) CHECK(from_base64(b64["data"][i].at("embedding")) == want[i]);
  const json single = post(c, "/v1/embeddings", {{"input", kTexts[2]}});
  CHECK(floats(single["data"][0]["embedding"]) == want[2]);

  const json tei = post(c, "/embed", {{"inputs", inputs}});
  for (size_t i = 0; i < kTexts.size(); i++) CHECK(floats(tei[i]) == want[i]);
  const json llama = post(c, "/embedding", {{"content", inputs}});
  for (size_t i = 0; i < kTexts.size(); i++) {
    CHECK(llama[i].at("index") == i);
    CHECK(floats(llama[i].at("embedding")[0]) == want[i]);
  }
  // Matryoshka, normalization choices and per-token vectors, against the same CLI flags.
  const auto dims8 = cli_rows(kBert, "--dims 8", kTexts);
  const json d8 = post(c, "/v1/embeddings", {{"input", inputs}, {"dimensions", 8}});
  const json t8 = post(c, "/embed", {{"inputs", inputs}, {"dimensions", 8}});
  for (size_t i = 0; i < kTexts.size(); i++) {
    CHECK(floats(d8["data"][i]["embedding"]) == dims8[i]);
    CHECK(floats(t8[i]) == dims8[i]);
  }
  const auto raw = cli_rows(kBert, "--normalize -1", kTexts);
  const json unnormalized = post(c, "/embed", {{"inputs", inputs}, {"normalize", false}});
  const json l1 = post(c, "/embedding", {{"content", inputs}, {"embd_normalize", 1}});
  const auto want_l1 = cli_rows(kBert, "--normalize 1", kTexts);
  for (size_t i = 0; i < kTexts.size(); i++) {
    CHECK(floats(unnormalized[i]) == raw[i]);
    CHECK(floats(l1[i]["embedding"][0]) == want_l1[i]);
  }
  const auto tokens = cli_rows(kBert, "--pooling none --normalize -1", {kTexts[0], kTexts[4]});
  const json all = post(c, "/embed_all", {{"inputs", {kTexts[0], kTexts[4]}}});
  std::vector<std::vector<float>> got;
  for (const json& text : all)
    for (const json& t : text) got.push_back(floats(t));
  CHECK(got == tokens);
  // Long inputs: truncate (either side) equals the CLI's --truncate --truncate-direction.
  std::string long_text;
  for (int i = 0; i < 200; i++) long_text += "word" + std::to_string(i % 7) + " ";
  for (const char* dir : {"right", "left"}) {
    const auto cut = cli_rows(kBert, std::string("--truncate --truncate-direction ") + dir, {long_text});
    const json j = post(c, "/embed", {{"inputs", long_text}, {"truncate", true}, {"truncation_direction", dir[0] == 'r' ? "Right" : "Left"}});
    CHECK(floats(j[0]) == cut[0]);
  }
  // Token ids in: the ids /tokenize gives for a text embed to the text's vector.
  const json toks = post(c, "/tokenize", {{"inputs", kTexts[0]}});
  std::vector<int> ids;
  for (const json& t : toks[0]) ids.push_back(t.at("id"));
  const json by_ids = post(c, "/v1/embeddings", {{"input", {ids}}});
  CHECK(floats(by_ids["data"][0]["embedding"]) == want[0]);
  // A prompt by name: the preset's text prepended, as the CLI's --prompt-name.
  const auto e5 = cli_rows(kBert, "--prompt-name e5-query", {kTexts[1]});
  CHECK(floats(post(c, "/embed", {{"inputs", kTexts[1]}, {"prompt_name", "e5-query"}})[0]) == e5[0]);
  CHECK(s.terminate() == 0);
}

// Long inputs through the one executor (engine/executor.h), as the CLI runs them: windows
// (--long chunk) on the bidirectional model, a decoder's input longer than a pass in pieces (the
// server's --max-batch-tokens as the CLI's --batch-tokens), and late chunking (one vector per chunk,
// with its span); every row bit for bit the CLI's.
TEST_CASE("long inputs, pieces and late chunking answer the CLI's rows bit for bit", "[server]") {
  std::string long_text;
  for (int i = 0; i < 60; i++) long_text += "word" + std::to_string(i % 11) + " ";
  const std::vector<std::string> texts = {long_text, kTexts[0], long_text + "and a different end"};
  const json inputs = texts;
  {
    ServerProcess s(kBert, {"--max-input-tokens", "16", "--long", "chunk"});
    REQUIRE(s.running());
    auto c = s.client();
    const auto want = cli_rows(kBert, "--max-tokens 16 --long chunk", texts);
    REQUIRE(want.size() == texts.size());
    const json oa = post(c, "/v1/embeddings", {{"input", inputs}});
    const json tei = post(c, "/embed", {{"inputs", inputs}});
    for (size_t i = 0; i < texts.size(); i++) {
      CHECK(floats(oa["data"][i]["embedding"]) == want[i]);
      CHECK(floats(tei[i]) == want[i]);
    }
    // The request's own overlap, as --long-overlap.
    const auto overlap2 = cli_rows(kBert, "--max-tokens 16 --long chunk --long-overlap 2", {long_text});
    CHECK(floats(post(c, "/embed", {{"inputs", long_text}, {"long_overlap", 2}})[0]) == overlap2[0]);
    CHECK(overlap2[0] != want[0]);
    // Late chunking: one item per input, its chunks with their spans, as the CLI's jsonl (it
    // windows long texts itself, so the request turns the server's --long chunk off).
    const std::string cli_out = cli(kBert + " --max-tokens 16 --late-chunking --chunk-by tokens --chunk-tokens 8 -f jsonl", texts);
    std::istringstream lines(cli_out);
    const json late = post(c, "/v1/embeddings", {{"input", inputs}, {"late_chunking", true}, {"long_inputs", "error"}, {"chunk_by", "tokens"}, {"chunk_tokens", 8}});
    const json late_tei = post(c, "/embed", {{"inputs", inputs}, {"late_chunking", true}, {"long_inputs", "error"}, {"chunk_by", "tokens"}, {"chunk_tokens", 8}});
    size_t i = 0, chunks = 0;
    for (std::string line; std::getline(lines, line); i++) {
      const json want_chunks = json::parse(line).at("chunks");
      chunks += want_chunks.size();
      const json& got = late["data"][i].at("chunks");
      REQUIRE(got.size() == want_chunks.size());
      for (size_t k = 0; k < got.size(); k++) {
        CHECK(got[k].at("span") == want_chunks[k].at("span"));
        CHECK(floats(got[k].at("embedding")) == floats(want_chunks[k].at("embedding")));
        CHECK(floats(late_tei[i][k]) == floats(want_chunks[k].at("embedding")));
      }
    }
    CHECK(i == texts.size());
    CHECK(chunks > 2 * texts.size());  // the long texts have many
    CHECK(s.terminate() == 0);
  }
  {
    // A decoder: inputs longer than a pass (16 tokens) run in pieces with a KV cache.
    // Within the context (128 tokens): the first text is about 110.
    const std::vector<std::string> decoder_texts = {long_text.substr(0, long_text.size() / 2), kTexts[0], kTexts[5]};
    ServerProcess s(kQwen, {"--max-batch-tokens", "16"});
    REQUIRE(s.running());
    auto c = s.client();
    const auto want = cli_rows(kQwen, "--batch-tokens 16", decoder_texts);
    REQUIRE(want.size() == decoder_texts.size());
    const json oa = post(c, "/v1/embeddings", {{"input", decoder_texts}});
    for (size_t i = 0; i < decoder_texts.size(); i++) CHECK(floats(oa["data"][i]["embedding"]) == want[i]);
    CHECK(s.terminate() == 0);
  }
}

// A model whose pooling is none (here the Qwen fixture with qwen3.pooling_type set to 0, as a GGUF
// that asks for token vectors has it): OpenAI's routes and TEI's /embed promise one vector per
// input, so they refuse it (llama-server refuses pooling none on its OpenAI route too); TEI's
// /embed_all and llama.cpp's /embedding answer one vector per token.
TEST_CASE("pooling none: the routes that promise one vector per input refuse it, the per-token routes answer", "[server]") {
  const std::string none = tmp_path("qwen3-pooling-none.gguf");
  {
    embed::gguf::Writer edits;
    edits.set<uint32_t>("qwen3.pooling_type", 0);
    embed::gguf::write_with_metadata(embed::gguf::File::open(kQwen), edits, none);
  }
  ServerProcess s(none);
  REQUIRE(s.running());
  auto c = s.client();
  CHECK(json::parse(c.Get("/info")->body).at("model_type").at("embedding").at("pooling") == "none");
  const std::vector<std::string> texts = {kTexts[0], kTexts[4]};
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    const json e = expect_error(c, path, json{{"input", texts}}.dump(), 400, "Validation");
    CHECK(e.at("error") == "this model's pooling is none (one vector per token), and " + std::string(path) +
                               " answers one vector per input: use /embed_all (TEI) or /embedding (llama.cpp) for per-token vectors, "
                               "or send kv_embedding: true on a decoder (hybrid pooling)");
    expect_error(c, path, R"({"input": [[1, 2, 3]], "encoding_format": "base64"})", 400, "Validation");
  }
  const json tei = expect_error(c, "/embed", json{{"inputs", texts}}.dump(), 400, "Validation");
  CHECK_THAT(tei.at("error").get<std::string>(), Catch::Contains("/embed answers one vector per input"));
  expect_error(c, "/embed", R"({"inputs": "a", "normalize": false, "dimensions": 8})", 400, "Validation");
  // Per token: /embed_all and /embedding both answer the final hidden states, un-normalized, as the
  // CLI's --pooling none --normalize -1 on the original file; n_tokens rows per input. llama-server
  // applies embd_normalize to pooled vectors only, so /embedding ignores it here (even 1 or 2).
  const auto hidden = cli_rows(kQwen, "--pooling none --normalize -1", texts);
  const auto normalized = cli_rows(kQwen, "--pooling none", texts);
  const size_t n0 = post(c, "/tokenize", {{"inputs", {texts[0]}}})[0].size(), n1 = post(c, "/tokenize", {{"inputs", {texts[1]}}})[0].size();
  REQUIRE(hidden.size() == n0 + n1);
  REQUIRE(normalized.size() == n0 + n1);
  const json all = post(c, "/embed_all", {{"inputs", texts}});
  REQUIRE(all.size() == 2);
  CHECK(all[0].size() == n0);
  CHECK(all[1].size() == n1);
  for (const json& fields : {json::object(), json{{"embd_normalize", 2}}, json{{"embd_normalize", 1}}}) {
    json body = fields;
    body["content"] = texts;
    const json llama = post(c, "/embedding", body);
    INFO(fields.dump());
    REQUIRE(llama.size() == 2);
    CHECK(llama[0].at("index") == 0);
    CHECK(llama[1].at("index") == 1);
    REQUIRE(llama[0].at("embedding").size() == n0);
    REQUIRE(llama[1].at("embedding").size() == n1);
    for (size_t t = 0; t < n0 + n1; t++) {
      const size_t i = t < n0 ? 0 : 1, k = t < n0 ? t : t - n0;
      if (fields.empty()) CHECK(floats(all[i][k]) == hidden[t]);
      CHECK(floats(llama[i]["embedding"][k]) == hidden[t]);
    }
  }
  // The hidden states are not unit vectors (so an L2-normalizing /embedding could not pass above):
  // the first token's row, its L2 norm computed here, is far from 1.
  double norm = 0;
  for (float x : hidden[0]) norm += static_cast<double>(x) * x;
  CHECK(std::fabs(std::sqrt(norm) - 1.0) > 0.01);
  CHECK(hidden[0] != normalized[0]);
  // KV-Embedding pools (hybrid by default), so a request that asks for it gets one vector per input.
  const json kv = post(c, "/v1/embeddings", {{"input", texts}, {"kv_embedding", true}});
  REQUIRE(kv.at("data").size() == 2);
  const auto want_kv = cli_rows(kQwen, "--kv-embedding", texts);
  for (size_t i = 0; i < 2; i++) CHECK(floats(kv["data"][i].at("embedding")) == want_kv[i]);
  CHECK(floats(post(c, "/embed", {{"inputs", texts[1]}, {"kv_embedding", true}})[0]) == want_kv[1]);
  std::remove(none.c_str());
}

TEST_CASE("rerank routes answer the CLI's scores, best first, in TEI's and Jina's shapes", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  auto c = s.client();
  const std::vector<std::string> docs = {"The cat sat on the mat.", "Stocks fell sharply.", "A kitten sleeps."};
  const std::string query = "Where is the cat?";
  std::map<size_t, float> want;  // index -> the CLI's raw score
  std::istringstream in(cli("rerank " + kBert + " --query '" + query + "' -f jsonl", docs));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    want[j.at("index")] = j.at("relevance_score");
  }
  REQUIRE(want.size() == 3);
  const json tei = post(c, "/rerank", {{"query", query}, {"texts", docs}, {"raw_scores", true}, {"return_text", true}});
  REQUIRE(tei.size() == 3);
  float prev = INFINITY;
  for (const json& r : tei) {
    const size_t i = r.at("index");
    CHECK(r.at("score").get<float>() == want[i]);
    CHECK(r.at("text") == docs[i]);
    CHECK(r.at("score").get<float>() <= prev);
    prev = r.at("score");
  }
  // Default scores: the sigmoid of the logit (TEI's raw_scores=false), same order.
  const json sig = post(c, "/rerank", {{"query", query}, {"texts", docs}});
  for (size_t k = 0; k < 3; k++) {
    CHECK(sig[k].at("index") == tei[k].at("index"));
    CHECK(sig[k].at("score").get<double>() == Approx(1.0 / (1.0 + std::exp(-double(tei[k].at("score"))))).epsilon(1e-6));
    CHECK_FALSE(sig[k].contains("text"));
  }
  const json jina = post(c, "/v1/rerank", {{"model", "m"}, {"query", query}, {"documents", docs}, {"top_n", 2}, {"return_documents", true}});
  REQUIRE(jina.at("results").size() == 2);
  for (size_t k = 0; k < 2; k++) {
    CHECK(jina["results"][k].at("index") == tei[k].at("index"));
    CHECK(jina["results"][k].at("relevance_score").get<float>() == sig[k].at("score").get<float>());
    CHECK(jina["results"][k].at("document").at("text") == docs[jina["results"][k].at("index").get<size_t>()]);
  }
  // The Jina shape on /rerank too, when the body has documents.
  const json alias = post(c, "/rerank", {{"query", query}, {"documents", docs}});
  CHECK(alias.at("results").size() == 3);
}

// `embed serve --split-special`: every input's special-token text is plain text, as with the
// CLI's --split-special (vectors bit for bit, /tokenize ids); without it "[SEP]" is the token.
TEST_CASE("serve --split-special reads special-token text as text on every route", "[server]") {
  const std::vector<std::string> lines = {"a [SEP] b [CLS] c", "[MASK] is here"};
  ServerProcess s(kBert, {"--split-special"});
  REQUIRE(s.running());
  auto c = s.client();
  const auto want = cli_rows(kBert, "--split-special", lines);
  const json got = post(c, "/embed", {{"inputs", lines}});
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) CHECK(floats(got[i]) == want[i]);
  CHECK(cli_rows(kBert, "", lines) != want);
  std::vector<int> ids;
  std::istringstream in(cli("tokenize --split-special " + kBert, {lines[0]}, ""));
  for (int id; in >> id;) ids.push_back(id);
  const json t = post(c, "/tokenize", {{"inputs", {lines[0]}}});
  REQUIRE(t[0].size() == ids.size());
  for (size_t i = 0; i < ids.size(); i++) CHECK(t[0][i].at("id") == ids[i]);
  // llama.cpp's route: parse_special defaults to false here, and true asks for the tokens.
  CHECK(post(c, "/tokenize", {{"content", lines[0]}, {"add_special", true}}).at("tokens").get<std::vector<int>>() == ids);
  CHECK(post(c, "/tokenize", {{"content", lines[0]}, {"add_special", true}, {"parse_special", true}}).at("tokens").get<std::vector<int>>() !=
        ids);
}

TEST_CASE("tokenize, decode, info, models, metrics, openapi and health", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  auto c = s.client();
  // /tokenize equals `embed tokenize`, with byte offsets into the text.
  std::string ids_line = cli("tokenize " + kBert, {kTexts[0]}, "");
  std::vector<int> want;
  std::istringstream in(ids_line);
  for (int id; in >> id;) want.push_back(id);
  const json t = post(c, "/tokenize", {{"inputs", {kTexts[0]}}});
  REQUIRE(t[0].size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    CHECK(t[0][i].at("id") == want[i]);
    if (!t[0][i].at("special").get<bool>()) {
      const size_t a = t[0][i].at("start"), b = t[0][i].at("stop");
      CHECK(t[0][i].at("text") == kTexts[0].substr(a, b - a));
    }
  }
  CHECK(t[0][0].at("special") == true);
  const json llama = post(c, "/tokenize", {{"content", kTexts[0]}, {"add_special", true}});
  CHECK(llama.at("tokens").get<std::vector<int>>() == want);
  const json d = post(c, "/decode", {{"ids", want}});
  CHECK_THAT(d[0].get<std::string>(), Catch::StartsWith("a man is playing a guitar"));  // the uncased WordPiece words
  CHECK(post(c, "/detokenize", {{"tokens", want}}).at("content").is_string());
  auto info = c.Get("/info");
  REQUIRE(info);
  const json i = json::parse(info->body);
  CHECK(i.at("max_input_length") == 128);
  CHECK(i.at("max_client_batch_size") == 32);
  CHECK(i.at("max_batch_tokens") == 16384);
  CHECK(i.at("model_type").at("embedding").at("pooling") == "mean");
  auto models = c.Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body).at("data")[0].at("id") == "model");
  auto health = c.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  post(c, "/embed", {{"inputs", {"one", "two", "three"}}});
  auto m = c.Get("/metrics");
  REQUIRE(m);
  for (const char* name : {"embed_requests_total{model=\"model\",route=\"/embed\",status=\"200\"} 1", "embed_inputs_total{model=\"model\"} 3",
                           "embed_queue_depth{model=\"model\"} 0", "embed_requests_total{model=\"\",route=\"/v1/models\",status=\"200\"} 1",
                           "embed_batch_size_bucket", "embed_batch_tokens_bucket", "embed_queue_seconds_count{model=\"model\"} 1",
                           "embed_compute_seconds_sum", "# TYPE embed_batch_size histogram"})
    CHECK_THAT(m->body, Catch::Contains(name));
  auto api = c.Get("/openapi.json");
  REQUIRE(api);
  const json doc = json::parse(api->body);
  for (const char* path : {"/v1/embeddings", "/embeddings", "/embed", "/embed_all", "/embedding", "/rerank", "/v1/rerank", "/tokenize",
                           "/decode", "/info", "/health", "/metrics", "/v1/models", "/openapi.json", "/"})
    CHECK(doc.at("paths").contains(path));
  // Error bodies as each route answers them: OpenAI's shape on OpenAI's route, TEI's elsewhere.
  const auto error_schema = [&](const char* path) { return doc["paths"][path]["post"]["responses"]["422"]["content"]["application/json"]["schema"]; };
  CHECK(error_schema("/v1/embeddings")["properties"]["error"]["properties"].contains("message"));
  CHECK(error_schema("/embed")["properties"]["error"]["type"] == "string");
}

namespace {

// The value of Prometheus sample `name`{model="MODEL"} in /metrics, or -1.
double metric(httplib::Client& c, const std::string& name, const std::string& model = "model") {
  auto m = c.Get("/metrics");
  REQUIRE(m);
  const std::string sample = name + "{model=\"" + model + "\"} ";
  const size_t at = m->body.find("\n" + sample);
  return at == std::string::npos ? -1 : std::stod(m->body.substr(at + sample.size() + 1));
}

size_t token_count(httplib::Client& c, const std::string& text) { return post(c, "/tokenize", {{"inputs", {text}}})[0].size(); }

}  // namespace

// Truncation is reported where the peers report tokens: usage.prompt_tokens and x-compute-tokens
// count the tokens computed (after truncation, as TEI's prompt_tokens), and /metrics counts the
// inputs that were cut (embed_truncated_inputs_total; no peer API has a place for it).
TEST_CASE("truncated inputs: usage counts the tokens computed, /metrics counts the inputs cut", "[server]") {
  ServerProcess s(kBert, {"--max-input-tokens", "16", "--auto-truncate"});
  REQUIRE(s.running());
  auto c = s.client();
  std::string long_text;
  for (int i = 0; i < 40; i++) long_text += "word" + std::to_string(i % 7) + " ";
  const size_t n_long = token_count(c, long_text), n_short = token_count(c, kTexts[4]), n_other = token_count(c, kTexts[0]);
  REQUIRE(n_long > 16);
  REQUIRE(n_short < 16);
  REQUIRE(n_other < 16);
  CHECK(metric(c, "embed_truncated_inputs_total") == 0);
  // --auto-truncate: OpenAI's route (which has no truncate field) cuts the long input to 16 tokens.
  auto r = c.Post("/v1/embeddings", json{{"input", {long_text, kTexts[4]}}}.dump(), "application/json");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const json j = json::parse(r->body);
  CHECK(j.at("usage").at("prompt_tokens") == 16 + n_short);
  CHECK(j.at("usage").at("total_tokens") == 16 + n_short);
  CHECK(r->get_header_value("x-compute-tokens") == std::to_string(16 + n_short));
  CHECK(floats(j["data"][0].at("embedding")) == cli_rows(kBert, "--max-tokens 16 --truncate", {long_text})[0]);
  CHECK(metric(c, "embed_truncated_inputs_total") == 1);
  CHECK(metric(c, "embed_tokens_total") == 16 + n_short);
  // Nothing to cut: the counter stays; two long inputs cut from the left: +2.
  post(c, "/embed", {{"inputs", {kTexts[0], kTexts[4]}}});
  CHECK(metric(c, "embed_truncated_inputs_total") == 1);
  auto left = c.Post("/embed", json{{"inputs", {long_text, kTexts[0], long_text + "more"}}, {"truncation_direction", "Left"}}.dump(),
                     "application/json");
  REQUIRE(left);
  REQUIRE(left->status == 200);
  CHECK(left->get_header_value("x-compute-tokens") == std::to_string(16 + n_other + 16));
  CHECK(metric(c, "embed_truncated_inputs_total") == 3);
  // A request that says truncate: false is refused (413), and counts nothing.
  expect_error(c, "/embed", json{{"inputs", long_text}, {"truncate", false}}.dump(), 413, "Validation", "inputs", 0);
  CHECK(metric(c, "embed_truncated_inputs_total") == 3);
  // Rerank pairs: a query + document pair over the limit is cut, and counted.
  auto rr = c.Post("/v1/rerank", json{{"query", "q"}, {"documents", {long_text, "short"}}}.dump(), "application/json");
  REQUIRE(rr);
  REQUIRE(rr->status == 200);
  // The long pair counts 16 tokens, the short pair what it counts alone (not cut).
  const int64_t n_pair = post(c, "/v1/rerank", {{"query", "q"}, {"documents", {"short"}}}).at("usage").at("total_tokens");
  CHECK(n_pair < 16);
  CHECK(json::parse(rr->body).at("usage").at("total_tokens") == 16 + n_pair);
  CHECK(rr->get_header_value("x-compute-tokens") == std::to_string(16 + n_pair));
  CHECK(metric(c, "embed_truncated_inputs_total") == 4);
  CHECK(metric(c, "embed_inputs_total") == 10);
}

TEST_CASE("every error code, with the field and index named", "[server]") {
  ServerProcess s(kBert, {"--max-client-batch-size", "4", "--payload-limit", "20000", "--max-input-tokens", "32"});
  REQUIRE(s.running());
  auto c = s.client();
  expect_error(c, "/embed", "{\"inputs\": [\"a\",", 400, "InvalidJson");
  expect_error(c, "/embed", "{\"inputs\": \"bad \xff byte\"}", 400, "InvalidJson");
  // A number beyond a double: nlohmann's parser throws out_of_range, not parse_error (request_tei_fuzz).
  expect_error(c, "/embed", R"({"inputs": "a", "dimensions": 42949672961e4294967296})", 400, "InvalidJson");
  expect_error(c, "/embed", R"({"inputs": []})", 400, "Empty", "inputs");
  expect_error(c, "/embed", R"({"inputs": ["ok", ""]})", 400, "Empty", "inputs", 1);
  expect_error(c, "/rerank", R"({"query": "", "texts": ["a"]})", 400, "Empty", "query");
  expect_error(c, "/embed", R"({"inputs": 5})", 422, "Validation", "inputs");
  expect_error(c, "/embed", R"({"inputs": ["a", 5]})", 422, "Validation", "inputs", 1);
  expect_error(c, "/embed", R"({"inputs": "a", "normalize": "yes"})", 422, "Validation", "normalize");
  expect_error(c, "/embed", R"({"inputs": "a", "truncation_direction": "Up"})", 422, "Validation", "truncation_direction");
  expect_error(c, "/v1/embeddings", R"({"input": "a", "encoding_format": "int8"})", 422, "Validation", "encoding_format");
  expect_error(c, "/v1/embeddings", R"({"input": "a", "dimensions": 100000})", 422, "Validation");
  expect_error(c, "/v1/embeddings", R"({"input": [[1, 2, 99999999]]})", 422, "Tokenizer", "input", 0);
  expect_error(c, "/embed", R"({"inputs": "a", "prompt_name": "nope"})", 422, "Validation");
  expect_error(c, "/embed", "[1, 2]", 422, "Validation");
  expect_error(c, "/embed", R"({"inputs": ["a", "b", "c", "d", "e"]})", 413, "Validation", "inputs");
  std::string long_text;
  for (int i = 0; i < 100; i++) long_text += "word ";
  expect_error(c, "/embed", json{{"inputs", {"short", long_text}}}.dump(), 413, "Validation", "inputs", 1);
  expect_error(c, "/embed", json{{"inputs", std::string(30000, 'a')}}.dump(), 413, "Validation");  // body over --payload-limit
  // Refused by the transport before any route, still in the route's API's shape: OpenAI's and Ollama's.
  expect_error(c, "/v1/embeddings", json{{"input", std::string(30000, 'a')}}.dump(), 413, "Validation");
  auto ollama = c.Post("/api/embed", json{{"model", "model"}, {"input", std::string(30000, 'a')}}.dump(), "application/json");
  REQUIRE(ollama);
  CHECK(ollama->status == 400);  // Ollama answers 400 where TEI answers 413
  CHECK(json::parse(ollama->body) == json{{"error", "the request body is larger than the payload limit of 20000 bytes"}});
  {  // --max-request-tokens: two inputs fit it exactly, one more token is refused
    std::string text;
    for (int i = 0; i < 12; i++) text += "word ";
    const size_t n = post(c, "/tokenize", {{"inputs", {text}}})[0].size(), x = post(c, "/tokenize", {{"inputs", {"x"}}})[0].size();
    REQUIRE(n <= 32);
    ServerProcess bounded(kBert, {"--max-input-tokens", "32", "--max-request-tokens", std::to_string(2 * n)});
    REQUIRE(bounded.running());
    auto cb = bounded.client();
    CHECK(post(cb, "/embed", {{"inputs", {text, text}}}).size() == 2);
    const json e = expect_error(cb, "/embed", json{{"inputs", {text, text, "x"}}}.dump(), 413, "Validation", "inputs");
    CHECK_THAT(e.at("error").get<std::string>(), Catch::Contains(std::to_string(2 * n + x) + " tokens in all, more than this server's "
                                                                 "--max-request-tokens " + std::to_string(2 * n)));
  }
  CHECK(post(c, "/embed", {{"inputs", long_text}, {"truncate", true}}).size() == 1);
  auto nf = c.Get("/no/such/route");
  REQUIRE(nf);
  CHECK(nf->status == 404);
  auto wrong = c.Get("/embed");
  REQUIRE(wrong);
  CHECK(wrong->status == 405);
  CHECK(wrong->get_header_value("Allow") == "POST");
  auto wrong2 = c.Post("/health", "{}", "application/json");
  REQUIRE(wrong2);
  CHECK(wrong2->status == 405);
  CHECK(c.Get("/health")->status == 200);

  // Model kind: an embedding-only model refuses rerank, a reranker refuses embeddings.
  ServerProcess embedder(kQwen), reranker(kRerank);
  REQUIRE(embedder.running());
  REQUIRE(reranker.running());
  auto ce = embedder.client(), cr = reranker.client();
  expect_error(ce, "/rerank", R"({"query": "q", "texts": ["a"]})", 400, "Validation");
  expect_error(ce, "/v1/rerank", R"({"query": "q", "documents": ["a"]})", 400, "Validation");
  expect_error(cr, "/v1/embeddings", R"({"input": "a"})", 400, "Validation");
  expect_error(cr, "/embed", R"({"inputs": "a"})", 400, "Validation");
  CHECK(post(cr, "/rerank", {{"query", "q"}, {"texts", {"a", "b"}}}).size() == 2);

  // API key: 401 without it, except /health and /metrics.
  ServerProcess keyed(kBert, {"--api-key", "sekret", "--cors", "*"});
  REQUIRE(keyed.running());
  auto ck = keyed.client();
  expect_error(ck, "/embed", R"({"inputs": "a"})", 401, "Unauthorized");
  CHECK(ck.Get("/info")->status == 401);
  CHECK(ck.Get("/health")->status == 200);
  CHECK(ck.Get("/metrics")->status == 200);
  CHECK(ck.Get("/")->status == 200);  // the playground page: its calls send the key typed into it
  auto ok = ck.Post("/embed", httplib::Headers{{"Authorization", "Bearer sekret"}}, R"({"inputs": "a"})", "application/json");
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(ok->get_header_value("Access-Control-Allow-Origin") == "*");
  auto bad = ck.Post("/embed", httplib::Headers{{"Authorization", "Bearer sekreT"}}, R"({"inputs": "a"})", "application/json");
  CHECK(bad->status == 401);
  auto pre = ck.Options("/embed");
  REQUIRE(pre);
  CHECK(pre->status == 204);
  CHECK(pre->get_header_value("Access-Control-Allow-Methods") == "GET, POST, OPTIONS");

  // A configuration that cannot work is refused at startup.
  ServerProcess refused(kBert, {"--max-batch-tokens", "64"});
  CHECK_FALSE(refused.running());
  CHECK(refused.exit_code() == 2);  // usage: a combination of flags
  CHECK_THAT(refused.log(), Catch::Contains("--max-batch-tokens 64 is below the longest admissible input (128 tokens"));
}

TEST_CASE("overload answers 429 with Retry-After, and every other answer is right", "[server]") {
  ServerProcess s(kBert, {"--max-concurrent-requests", "1"});
  REQUIRE(s.running());
  const auto want = cli_rows(kBert, "", kTexts);
  std::atomic<int> ok{0}, overloaded{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; t++)
    clients.emplace_back([&, t] {
      auto c = s.client();
      for (int k = 0; k < 25 && overloaded.load() < 5; k++) {
        auto r = c.Post("/embed", json{{"inputs", kTexts}}.dump(), "application/json");
        if (!r) {
          other++;
        } else if (r->status == 429) {
          overloaded += r->get_header_value("Retry-After") == "1" && json::parse(r->body).at("error_type") == "Overloaded";
        } else if (r->status == 200) {
          const json j = json::parse(r->body);
          bool same = j.size() == kTexts.size();
          for (size_t i = 0; same && i < kTexts.size(); i++) same = floats(j[i]) == want[i];
          (same ? ok : other)++;
        } else {
          other++;
        }
      }
      (void)t;
    });
  for (std::thread& th : clients) th.join();
  CHECK(other == 0);
  CHECK(ok > 0);
  CHECK(overloaded > 0);
}

TEST_CASE("concurrent clients with overlapping inputs get their own rows, equal to solo runs", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  // Solo answers for each option set, one text per request.
  const std::vector<json> variants = {json::object(), json{{"dimensions", 8}}, json{{"normalize", false}}, json{{"dimensions", 16}}};
  std::vector<std::vector<std::vector<float>>> solo(variants.size());
  {
    auto c = s.client();
    for (size_t v = 0; v < variants.size(); v++)
      for (const std::string& t : kTexts) {
        json body = variants[v];
        body["inputs"] = {t};
        solo[v].push_back(floats(post(c, "/embed", body)[0]));
      }
  }
  std::atomic<int> checked{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; t++)
    clients.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      auto c = s.client();
      for (int k = 0; k < 15; k++) {
        const size_t v = rng() % variants.size();
        std::vector<size_t> pick;
        for (size_t n = 1 + rng() % 8; pick.size() < n;) pick.push_back(rng() % kTexts.size());  // repeats overlap too
        json body = variants[v];
        body["inputs"] = json::array();
        for (size_t i : pick) body["inputs"].push_back(kTexts[i]);
        auto r = c.Post("/embed", body.dump(), "application/json");
        if (!r || r->status != 200) {
          WARN("request failed: " << (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error())));
          wrong++;
          continue;
        }
        const json j = json::parse(r->body);
        for (size_t q = 0; q < pick.size(); q++) {
          checked++;
          if (q >= j.size() || floats(j[q]) != solo[v][pick[q]]) wrong++;
        }
      }
    });
  for (std::thread& th : clients) th.join();
  CHECK(wrong == 0);
  CHECK(checked > 100);
}

namespace {

// A raw TCP connection for the transport-level faults a client library will not produce.
int connect_raw(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

}  // namespace

TEST_CASE("slow, truncated and vanishing clients cost bounded time and disturb no one", "[server]") {
  ServerProcess s(kBert, {"--read-timeout", "1"});
  REQUIRE(s.running());
  const auto want = cli_rows(kBert, "", {kTexts[0]});
  // Slow headers, a body that stops short of its Content-Length, and a client that sends a
  // request and leaves before the answer.
  const int slow = connect_raw(s.port());
  REQUIRE(::send(slow, "POST /embed HTTP/1.1\r\nHost: x\r\n", 32, 0) == 32);
  const int truncated = connect_raw(s.port());
  const std::string partial = "POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"inputs\": [\"a";
  REQUIRE(::send(truncated, partial.data(), partial.size(), 0) == static_cast<ssize_t>(partial.size()));
  for (int k = 0; k < 20; k++) {
    const int gone = connect_raw(s.port());
    const std::string body = json{{"inputs", std::vector<std::string>(32, kTexts[5])}}.dump();
    const std::string req = "POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    REQUIRE(::send(gone, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
    ::close(gone);
  }
  ::close(truncated);
  // Meanwhile others are served, correctly.
  auto c = s.client();
  CHECK(floats(post(c, "/embed", {{"inputs", {kTexts[0]}}})[0]) == want[0]);
  // The slow client is cut off after --read-timeout (1 s): its socket reads end-of-file.
  timeval tv{5, 0};
  ::setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[256];
  const ssize_t n = ::recv(slow, buf, sizeof buf, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(n == 0);
  CHECK(waited < 3.0);
  ::close(slow);
  CHECK(c.Get("/health")->status == 200);
  const std::string metrics = c.Get("/metrics")->body;
  CHECK_THAT(metrics, Catch::Contains("embed_requests_inside{model=\"model\"} 0"));
}

namespace {

// Reads from a raw connection until the peer closes it (or `seconds` pass); returns what came.
std::string read_until_closed(int fd, double seconds, bool* closed) {
  timeval tv{0, 100000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  *closed = false;
  while (std::chrono::steady_clock::now() < end) {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      *closed = true;
      break;
    }
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

}  // namespace

TEST_CASE("connection bounds: keep-alive requests and idle time, open connections, header size", "[server]") {
  ServerProcess s(kBert, {"--keep-alive-requests", "3", "--keep-alive-timeout", "1", "--read-timeout", "10", "--max-connections", "4"});
  REQUIRE(s.running());
  const std::string req = "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n{\"inputs\": \"a\"}";
  // Three requests pipelined on one connection: three answers, the third says Connection: close,
  // and the server closes the connection; a fourth request on it gets nothing.
  const int fd = connect_raw(s.port());
  const std::string four = req + req + req + req;
  REQUIRE(::send(fd, four.data(), four.size(), 0) == static_cast<ssize_t>(four.size()));
  bool closed = false;
  const std::string got = read_until_closed(fd, 5, &closed);
  ::close(fd);
  CHECK(closed);
  CHECK(count_of(got, "HTTP/1.1 200 OK") == 3);
  CHECK(count_of(got, "Connection: close") == 1);
  // An idle keep-alive connection is closed after --keep-alive-timeout (1 s), well before the
  // --read-timeout (10 s) that bounds one request's arrival.
  const int idle = connect_raw(s.port());
  REQUIRE(::send(idle, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string one = read_until_closed(idle, 8, &closed);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(idle);
  CHECK(closed);
  CHECK(count_of(one, "HTTP/1.1 200 OK") == 1);
  CHECK(waited > 0.9);
  CHECK(waited < 3.0);
  // --max-connections 4: four open connections are served, the fifth is answered 503 and closed.
  std::vector<int> held;
  for (int k = 0; k < 4; k++) held.push_back(connect_raw(s.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted: they count as open
  const int fifth = connect_raw(s.port());
  const std::string refused = read_until_closed(fifth, 5, &closed);
  ::close(fifth);
  CHECK(closed);
  CHECK_THAT(refused, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(refused, Catch::Contains("too many open connections"));
  for (int h : held) ::close(h);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Headers over 16 KiB: 431.
  auto c = s.client();
  auto big = c.Post("/tokenize", httplib::Headers{{"X-Filler", std::string(20000, 'h')}}, R"({"inputs": "a"})", "application/json");
  REQUIRE(big);
  CHECK(big->status == 431);
  CHECK(c.Get("/health")->status == 200);
}

TEST_CASE("thousands of malformed bodies, then /health still answers 200", "[server][fuzz]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  auto c = s.client();
  std::mt19937 rng(20240607);
  const std::vector<std::string> routes = {"/embed", "/v1/embeddings", "/embed_all", "/embedding", "/rerank", "/v1/rerank", "/tokenize", "/decode"};
  const std::vector<std::string> seeds = {
      R"({"inputs": ["a", "b"], "normalize": true, "dimensions": 8})", R"({"input": [[1, 2, 3]], "encoding_format": "base64"})",
      R"({"query": "q", "texts": ["a", "b"], "raw_scores": true})", R"({"query": "q", "documents": [{"text": "a"}], "top_n": 1})",
      R"({"content": ["x"], "embd_normalize": 1})", R"({"ids": [[101, 102]]})",
      R"({"inputs": ["a"], "precision": "ubinary", "kv_embedding": true, "kv_layers": [0, 1], "kv_bias": 1.5, "prompt_template": "q {text}"})"};
  int answered = 0, server_errors = 0;
  for (int k = 0; k < 3000; k++) {
    std::string body = seeds[rng() % seeds.size()];
    switch (rng() % 6) {
      case 0: body = body.substr(0, rng() % body.size()); break;  // truncated
      case 1:
        for (int m = 0; m < 4; m++) body[rng() % body.size()] = static_cast<char>(rng() % 256);  // flipped bytes
        break;
      case 2: body.insert(rng() % body.size(), std::string(1 + rng() % 40, "[{\"0,:-e9}]"[rng() % 11])); break;
      case 3: body = std::string(rng() % 64, static_cast<char>(rng() % 256)); break;  // noise
      case 4: body = std::string(2000, '[') + std::string(2000, ']'); break;          // deep nesting
      default: {
        json j = json::parse(body);
        const std::vector<json> odd = {nullptr, -1, 1e300, "x", json::array(), json::object(), true, 4294967296LL, json::array({-5})};
        j[j.begin().key()] = odd[rng() % odd.size()];
        body = j.dump();
      }
    }
    auto r = c.Post(routes[rng() % routes.size()].c_str(), body, "application/json");
    if (!r) {
      WARN("no answer: " << httplib::to_string(r.error()) << " for " << body.substr(0, 100));
      continue;
    }
    answered++;
    if (r->status >= 500) {
      server_errors++;
      WARN(body << " -> " << r->status << " " << r->body);
    }
  }
  CHECK(answered == 3000);
  CHECK(server_errors == 0);
  CHECK(c.Get("/health")->status == 200);
  CHECK(s.terminate() == 0);
}

TEST_CASE("SIGTERM drains: requests in flight finish, the process exits 0", "[server]") {
  ServerProcess s(kBert);
  REQUIRE(s.running());
  const auto want = cli_rows(kBert, "", {kTexts[5]});
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unavailable{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; t++)
    clients.emplace_back([&] {
      auto c = s.client();
      while (!stop) {
        auto r = c.Post("/embed", json{{"inputs", std::vector<std::string>(16, kTexts[5])}}.dump(), "application/json");
        if (!r) break;  // the server has exited: connection refused
        if (r->status == 503) unavailable++;
        else if (r->status == 200 && floats(json::parse(r->body)[15]) == want[0]) ok++;
        else wrong++;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(s.terminate() == 0);
  stop = true;
  for (std::thread& th : clients) th.join();
  CHECK(wrong == 0);
  CHECK(ok > 0);
  CHECK_THAT(s.log(), Catch::Contains("draining") && Catch::Contains("stopped"));
}

// libFuzzer entry for the request decoding of one route family of `embed serve` (openai, tei,
// jina, llama, tokenize, ollama: read from the executable's name, request_<family>_fuzz): arbitrary bytes
// as the body of one of the family's routes, handed to the server's Api (no sockets) over the
// committed tiny models, and computed through the real scheduler. Aborts where the server breaks its promises: no answer or
// two, a 5xx, an answer that is not JSON, an error not in the family's shape (TEI's error and
// error_type; Ollama's error alone; OpenAI's error object), a 200 whose rows do not match the inputs. Owns no logic.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scheduler.h"
#include "tools/server/api.h"

using namespace embed;
using nlohmann::json;

namespace {

std::string g_family;  // openai, tei, jina, llama, tokenize or ollama

[[noreturn]] void broken(const std::string& what, const std::string& path, std::string_view body) {
  std::fprintf(stderr, "request_fuzz (%s): %s on %s (body of %zu bytes)\n", g_family.c_str(), what.c_str(), path.c_str(), body.size());
  std::abort();
}

// One served model: the Api a server would run for it, over its own scheduler.
struct Served {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<server::Metrics> metrics;
  std::unique_ptr<server::Api> api;
};

Served* serve(const std::string& name) {
  const std::string path = std::string(EMBED_SOURCE_DIR) + "/tests/fixtures/models/" + name + "/model.gguf";
  auto loaded = Model::load(path, ModelOptions{});
  if (!loaded) {
    std::fprintf(stderr, "request_fuzz: cannot load %s: %s\n", path.c_str(), loaded.error().message.c_str());
    std::exit(2);
  }
  auto* s = new Served;  // lives until exit: the scheduler's thread must outlive every input
  s->model = loaded.value();
  SchedulerOptions so;
  so.max_batch_tokens = 512;
  so.threads = 1;
  s->scheduler = std::make_unique<Scheduler>(s->model, so);
  s->metrics = std::make_unique<server::Metrics>();
  server::ApiConfig ac;
  ac.model_name = name;
  ac.max_client_batch_size = 8;  // small bounds keep each input cheap; the 413 paths are fuzzed too
  ac.max_input_tokens = 64;
  s->api = std::make_unique<server::Api>(s->model, *s->scheduler, *s->metrics, ac);
  return s;
}

struct Target {
  Served* served;
  const char* path;
};
// Never destroyed (nor the models and schedulers it points to): reachable at exit, so LeakSanitizer
// does not report them, while the schedulers' threads still run.
std::vector<Target>& g_targets = *new std::vector<Target>;

// The number of inputs a 200 answer must carry rows for: a string (or one token-id list) is one.
size_t inputs_in(const json& body, const char* name) {
  const json& v = body.at(name);
  if (!v.is_array()) return 1;
  return !v.empty() && v[0].is_number() ? 1 : v.size();
}

void check_success(const std::string& path, const json& body, const json& answer, std::string_view raw) {
  auto expect = [&](bool ok, const char* what) {
    if (!ok) broken(std::string("200 answer: ") + what, path, raw);
  };
  if (path == "/v1/embeddings" || path == "/embeddings") {
    const json& data = answer.at("data");
    expect(data.size() == inputs_in(body, "input"), "rows != inputs");
    for (size_t i = 0; i < data.size(); i++) expect(data[i].at("index") == i, "index out of order");
  } else if (path == "/embed" || path == "/embed_all") {
    expect(answer.is_array() && answer.size() == inputs_in(body, "inputs"), "rows != inputs");
  } else if (path == "/embedding") {
    expect(answer.is_array() && answer.size() == inputs_in(body, "content"), "rows != inputs");
  } else if (path == "/rerank" || path == "/v1/rerank") {
    const json& results = answer.is_array() ? answer : answer.at("results");
    const char* score = answer.is_array() ? "score" : "relevance_score";
    const size_t docs = body.contains("documents") ? body.at("documents").size() : body.at("texts").size();
    expect(results.size() <= docs && !results.empty(), "results outside 1..documents");
    std::vector<bool> seen(docs, false);
    for (size_t i = 0; i < results.size(); i++) {
      const size_t index = results[i].at("index").get<size_t>();
      expect(index < docs && !seen[index], "a document index outside the request or twice");
      seen[index] = true;
      if (i) expect(results[i - 1].at(score).get<double>() >= results[i].at(score).get<double>(), "scores not best first");
    }
  } else if (path == "/api/embed") {
    // Ollama's: one vector per input; "" (or []) asks for none. The model is echoed as asked.
    const json& input = body.contains("input") ? body.at("input") : json();
    const size_t inputs = input.is_string() ? (input.get_ref<const std::string&>().empty() ? 0 : 1) : input.is_array() ? input.size() : 0;
    expect(answer.at("embeddings").size() == inputs, "embeddings != inputs");
    expect(answer.at("model") == body.at("model"), "model not the one asked for");
    for (const json& row : answer.at("embeddings")) expect(row.is_array() && !row.empty(), "an empty vector");
  } else if (path == "/api/embeddings") {
    // The older route: one vector for a non-empty prompt, [] for none.
    const json& prompt = body.contains("prompt") ? body.at("prompt") : json();
    const bool some = prompt.is_string() && !prompt.get_ref<const std::string&>().empty();
    expect(answer.at("embedding").is_array() && answer.at("embedding").empty() != some, "a vector for no prompt or none for a prompt");
  } else if (path == "/api/show") {
    expect(answer.at("details").at("format") == "gguf" && answer.at("model_info").is_object(), "no details or model_info");
  } else if (path == "/tokenize") {
    expect(answer.is_array() ? answer.size() == inputs_in(body, "inputs") : answer.contains("tokens"), "token lists != inputs");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string name = std::filesystem::path(*argc > 0 ? (*argv)[0] : "").filename().string();
  const std::string prefix = "request_", suffix = "_fuzz";
  if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    g_family = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const std::string& family = g_family;
  Served* bert = serve("tiny-bert-rank");  // mean pooling and a rank head: embedding and rerank routes
  if (family == "openai") {
    Served* qwen = serve("tiny-qwen3-embed");
    g_targets = {{bert, "/v1/embeddings"}, {qwen, "/v1/embeddings"}, {bert, "/embeddings"}};
  } else if (family == "tei") {
    g_targets = {{bert, "/embed"}, {bert, "/embed_all"}, {bert, "/rerank"}};
  } else if (family == "jina") {
    Served* rerank = serve("tiny-qwen3-rerank");  // a yes/no reranker
    g_targets = {{bert, "/v1/rerank"}, {rerank, "/v1/rerank"}, {rerank, "/rerank"}};
  } else if (family == "llama") {
    Served* qwen = serve("tiny-qwen3-embed");
    g_targets = {{bert, "/embedding"}, {qwen, "/embedding"}, {qwen, "/tokenize"}, {qwen, "/detokenize"}};
  } else if (family == "tokenize") {
    Served* qwen = serve("tiny-qwen3-embed");
    g_targets = {{bert, "/tokenize"}, {qwen, "/tokenize"}, {bert, "/decode"}, {qwen, "/decode"}};
  } else if (family == "ollama") {
    // Ollama's routes; the seeds name each served model ("model", or /api/show's "name"), and the
    // reranker answers /api/embed with an error.
    Served* qwen = serve("tiny-qwen3-embed");
    Served* rerank = serve("tiny-qwen3-rerank");
    g_targets = {{bert, "/api/embed"}, {qwen, "/api/embed"}, {rerank, "/api/embed"}, {bert, "/api/embeddings"}, {qwen, "/api/show"}};
  } else {
    std::fprintf(stderr, "request_fuzz: unknown family '%s' (run as request_<openai|tei|jina|llama|tokenize|ollama>_fuzz)\n", family.c_str());
    std::exit(2);
  }
  return 0;
}

// The first byte picks the route (and model) of the family; the rest is the body.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Target& t = g_targets[data[0] % g_targets.size()];
  const std::string_view raw(reinterpret_cast<const char*>(data + 1), size - 1);
  server::HttpRequest request;
  request.method = "POST";
  request.path = t.path;
  request.body = std::string(raw);
  auto answered = std::make_shared<std::promise<server::HttpResponse>>();
  auto replies = std::make_shared<std::atomic<int>>(0);
  const std::string path = t.path;
  t.served->api->handle(std::move(request), [answered, replies, path, raw](server::HttpResponse r) {
    if (replies->fetch_add(1) > 0) broken("a second answer", path, raw);
    answered->set_value(std::move(r));
  });
  auto future = answered->get_future();
  if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) broken("no answer within 30 s", path, raw);
  const server::HttpResponse r = future.get();
  if (r.status >= 500) broken("status " + std::to_string(r.status) + ": " + r.body.substr(0, 300), path, raw);
  json answer;
  try {
    answer = json::parse(r.body);
  } catch (const json::exception& e) {
    broken("an answer that is not JSON (" + std::string(e.what()) + "): " + r.body.substr(0, 300), path, raw);
  }
  if (r.status != 200) {
    if (g_family == "ollama") {
      // Ollama's error body is {"error": "..."} alone; its codes: 400 for what is wrong with the
      // request, 404 for a model not served.
      if (!answer.is_object() || answer.size() != 1 || !answer.contains("error") || !answer["error"].is_string())
        broken("an error answer not in Ollama's shape {\"error\": \"...\"}: " + r.body.substr(0, 300), path, raw);
      if (r.status != 400 && r.status != 404) broken("unexpected status " + std::to_string(r.status), path, raw);
      return 0;
    }
    if (g_family == "openai") {
      // OpenAI's shape: {"error": {"message", "type", "param", "code"}}, param a string or null.
      const json* e = answer.is_object() && answer.size() == 1 && answer.contains("error") ? &answer["error"] : nullptr;
      if (!e || !e->is_object() || e->size() != 4 || !e->contains("message") || !(*e)["message"].is_string() || !e->contains("type") ||
          !(*e)["type"].is_string() || !e->contains("param") || !((*e)["param"].is_string() || (*e)["param"].is_null()) ||
          !e->contains("code") || !(*e)["code"].is_string())
        broken("an error answer not in OpenAI's shape {\"error\": {message, type, param, code}}: " + r.body.substr(0, 300), path, raw);
      if (r.status != 400 && r.status != 413 && r.status != 422) broken("unexpected status " + std::to_string(r.status), path, raw);
      return 0;
    }
    if (!answer.is_object() || !answer.contains("error") || !answer["error"].is_string() || !answer.contains("error_type") ||
        !answer["error_type"].is_string())
      broken("an error answer without error and error_type: " + r.body.substr(0, 300), path, raw);
    if (r.status != 400 && r.status != 413 && r.status != 422) broken("unexpected status " + std::to_string(r.status), path, raw);
    return 0;
  }
  try {
    check_success(path, json::parse(raw), answer, raw);
  } catch (const json::exception& e) {
    broken("a 200 answer of the wrong shape (" + std::string(e.what()) + "): " + r.body.substr(0, 300), path, raw);
  }
  return 0;
}

// Several models in one `embed serve` (--model NAME=PATH): routing by the request's model on the
// OpenAI, Jina, llama.cpp and Ollama routes (answers equal the CLI's for that model, bit for bit),
// TEI's routes and requests without a model on the first, 404 naming the served models, the
// listings, model-labelled metrics, a model that cannot load leaving the others serving, and
// least-recently-used unloading under --max-memory with the server's RSS read from /proc (sampled
// every 2 ms, loads included), a model serving a request never unloaded, and a model that cannot
// fit even alone refused with 507.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/models/synthetic.h"
#include "tests/server/server_client.h"

using namespace embed::test;

namespace {

std::vector<std::vector<float>> rows_of(const json& a) {
  std::vector<std::vector<float>> out;
  for (const json& r : a) out.push_back(floats(r));
  return out;
}

std::vector<std::vector<float>> openai_rows(const json& j) {
  std::vector<std::vector<float>> out;
  for (const json& d : j.at("data")) out.push_back(floats(d.at("embedding")));
  return out;
}

std::vector<std::string> names(const json& list, const char* key) {
  std::vector<std::string> out;
  for (const json& m : list) out.push_back(m.at(key));
  return out;
}

// Resident bytes of process `pid` (/proc/PID/statm: pages).
uint64_t resident_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// The highest VmRSS of process `pid` (/proc/PID/status), read every 2 ms on a thread of its own
// from construction to stop(): a load that goes over a bound and back between two requests shows.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), thread_([this] {
    while (!stop_) {
      const uint64_t now = vm_rss();
      if (now > peak_) peak_ = now;
      samples_++;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }) {}
  ~RssSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t peak() const { return peak_; }
  uint64_t samples() const { return samples_; }

 private:
  uint64_t vm_rss() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) << 10;  // "VmRSS:   12345 kB"
    return 0;
  }
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_{0}, samples_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("two models and a reranker in one server: each request gets its model's answer", "[server]") {
  ServerProcess s("", {"--model", "bert=" + kBert, "--model", "qwen=" + kQwen, "--model", "rerank=" + kRerank, "--model",
                       "broken=" + kFixtures + "/no-such-model.gguf"});
  REQUIRE(s.running());
  auto c = s.client();
  const json texts = kTexts;
  const auto bert = cli_rows(kBert, "", kTexts), qwen = cli_rows(kQwen, "", kTexts);
  REQUIRE(bert != qwen);  // so a request answered by the wrong model shows
  // Nothing is loaded before its first request (the listings say so).
  CHECK(json::parse(c.Get("/api/ps")->body).at("models").empty());

  // OpenAI: by model; without one, the first.
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    const json q = post(c, path, {{"input", texts}, {"model", "qwen"}});
    CHECK(openai_rows(q) == qwen);
    CHECK(q.at("model") == "qwen");
    const json b = post(c, path, {{"input", texts}, {"model", "bert"}});
    CHECK(openai_rows(b) == bert);
    CHECK(b.at("model") == "bert");
  }
  CHECK(openai_rows(post(c, "/v1/embeddings", {{"input", texts}})) == bert);
  // llama.cpp's /embedding: by model.
  const json llama = post(c, "/embedding", {{"content", texts}, {"model", "qwen"}});
  for (size_t i = 0; i < kTexts.size(); i++) CHECK(floats(llama[i].at("embedding")[0]) == qwen[i]);
  // TEI's routes: the first model, whatever the body says.
  CHECK(rows_of(post(c, "/embed", {{"inputs", texts}})) == bert);
  CHECK(rows_of(post(c, "/embed", {{"inputs", texts}, {"model", "qwen"}})) == bert);
  // Ollama: by model, tagged or not.
  CHECK(rows_of(post(c, "/api/embed", {{"model", "qwen:latest"}, {"input", texts}}).at("embeddings")) == qwen);
  CHECK(rows_of(post(c, "/api/embed", {{"model", "bert"}, {"input", texts}}).at("embeddings")) == bert);
  // Jina's rerank: by model; the scores are the CLI's.
  const std::vector<std::string> docs = {"The cat sat on the mat.", "Stocks fell sharply."};
  std::map<size_t, float> want;
  std::istringstream in(cli("rerank " + kRerank + " --query 'Where is the cat?' -f jsonl", docs));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    want[j.at("index")] = j.at("relevance_score");
  }
  REQUIRE(want.size() == 2);
  const json jina = post(c, "/v1/rerank", {{"model", "rerank"}, {"query", "Where is the cat?"}, {"documents", docs}});
  CHECK(jina.at("model") == "rerank");
  REQUIRE(jina.at("results").size() == 2);
  for (const json& r : jina.at("results")) CHECK(r.at("relevance_score").get<float>() == want[r.at("index").get<size_t>()]);

  // An unknown model: 404 naming the served ones, in each API's error shape.
  const json e = expect_error(c, "/v1/embeddings", json{{"input", "x"}, {"model", "nope"}}.dump(), 404, "NotFound", "model");
  CHECK_THAT(e.at("error").get<std::string>(), Catch::Contains("'nope'") && Catch::Contains("'bert', 'qwen', 'rerank', 'broken'"));
  auto o = c.Post("/api/embed", json{{"model", "nope"}, {"input", "x"}}.dump(), "application/json");
  REQUIRE(o);
  CHECK(o->status == 404);
  CHECK(json::parse(o->body).size() == 1);  // Ollama's {"error"}
  CHECK_THAT(json::parse(o->body).at("error").get<std::string>(), Catch::Contains("'bert:latest', 'qwen:latest'"));

  // A model that cannot load answers why; the others keep serving.
  const json b = expect_error(c, "/v1/embeddings", json{{"input", "x"}, {"model", "broken"}}.dump(), 503, "Unhealthy", "model");
  CHECK_THAT(b.at("error").get<std::string>(), Catch::Contains("'broken'") && Catch::Contains("no-such-model.gguf"));
  CHECK(openai_rows(post(c, "/v1/embeddings", {{"input", texts}, {"model", "qwen"}})) == qwen);

  // Listings: every served model; /api/ps the loaded ones.
  const json models = json::parse(c.Get("/v1/models")->body);
  CHECK(names(models.at("data"), "id") == std::vector<std::string>{"bert", "qwen", "rerank", "broken"});
  const json tags = json::parse(c.Get("/api/tags")->body);
  CHECK(names(tags.at("models"), "name") == std::vector<std::string>{"bert:latest", "qwen:latest", "rerank:latest", "broken:latest"});
  CHECK(tags["models"][1].at("size") == std::filesystem::file_size(kQwen));
  const json ps = json::parse(c.Get("/api/ps")->body);
  CHECK(names(ps.at("models"), "name") == std::vector<std::string>{"bert:latest", "qwen:latest", "rerank:latest"});

  // Metrics: one exposition, every sample labelled with its model.
  const std::string m = c.Get("/metrics")->body;
  CHECK_THAT(m, Catch::Contains("embed_requests_total{model=\"qwen\",route=\"/v1/embeddings\",status=\"200\"} 2"));
  CHECK_THAT(m, Catch::Contains("embed_requests_total{model=\"bert\",route=\"/embed\",status=\"200\"} 2"));
  CHECK_THAT(m, Catch::Contains("embed_inputs_total{model=\"rerank\"} 2"));
  CHECK_THAT(m, Catch::Contains("embed_queue_seconds_count{model=\"qwen\"} 5"));
  CHECK_THAT(m, Catch::Contains("embed_requests_inside{model=\"broken\"} 0"));
  CHECK(s.terminate() == 0);
}

TEST_CASE("serve --model and --models-file: bad entries are usage errors naming them", "[server]") {
  ServerProcess none("", {});
  CHECK(none.exit_code() == 2);
  CHECK_THAT(none.log(), Catch::Contains("--model NAME=MODEL"));
  ServerProcess bad("", {"--model", "just-a-path.gguf"});
  CHECK(bad.exit_code() == 2);
  CHECK_THAT(bad.log(), Catch::Contains("'just-a-path.gguf': expected NAME=MODEL"));
  ServerProcess twice("", {"--model", "a=" + kBert, "--model", "a=" + kQwen});
  CHECK(twice.exit_code() == 2);
  CHECK_THAT(twice.log(), Catch::Contains("'a' is given twice"));
  ServerProcess memory(kBert, {"--max-memory", "lots"});
  CHECK(memory.exit_code() == 2);
  CHECK_THAT(memory.log(), Catch::Contains("--max-memory 'lots'"));
  // A models file: NAME=MODEL lines, comments and blank lines skipped.
  const std::string file = tmp_path("models.txt");
  std::ofstream(file) << "# served models\n\nqwen=" << kQwen << "\n  bert=" << kBert << "  \n";
  ServerProcess s("", {"--models-file", file});
  REQUIRE(s.running());
  auto c = s.client();
  CHECK(names(json::parse(c.Get("/v1/models")->body).at("data"), "id") == std::vector<std::string>{"qwen", "bert"});
  CHECK(openai_rows(post(c, "/v1/embeddings", {{"input", kTexts}})) == cli_rows(kQwen, "", kTexts));  // the first: qwen
  std::remove(file.c_str());
}

// Three synthetic models of about 28 MB of weights each (token ids as input: they have no
// tokenizer). Measured first without a bound: the server's RSS with one model and with two. Then,
// with --max-memory between two models and three, the third evicts the least recently used idle
// model before it loads, and the server's RSS, sampled every 2 ms through loads and requests,
// stays under the bound; a model with a long request in flight is not unloaded though it is the
// least recently used; when every loaded model is serving requests a load that needs room is
// answered 503 with Retry-After; a bound that one model alone does not fit under is answered 507.
TEST_CASE("under --max-memory a third model unloads the least recently used, and RSS stays under the bound", "[server]") {
  SyntheticSpec spec;
  spec.d_model = 384;
  spec.n_heads = 6;
  spec.n_kv_heads = 6;
  spec.d_ff = 1536;
  spec.n_layers = 4;
  spec.n_vocab = 1000;
  spec.n_ctx = 128;
  std::vector<std::unique_ptr<TempFile>> files;
  for (int i = 0; i < 3; i++) {
    files.push_back(std::make_unique<TempFile>(".gguf"));
    write_synthetic(spec, files.back()->path);
  }
  // Passes of at most 128 tokens: the long requests below are many short passes, whose scratch is a
  // few MiB (--max-memory bounds the models; a pass of 16k tokens would hold hundreds of MiB).
  const std::vector<std::string> args = {"--model", "a=" + files[0]->path, "--model", "b=" + files[1]->path, "--model", "c=" + files[2]->path,
                                         "--max-batch-tokens", "128"};
  const json ids = json::array({json::array({1, 2, 3, 4, 5}), json::array({7, 8, 9})});
  auto embed = [&](httplib::Client& c, const char* model) { return openai_rows(post(c, "/v1/embeddings", {{"input", ids}, {"model", model}})); };
  auto loaded = [](httplib::Client& c) { return names(json::parse(c.Get("/api/ps")->body).at("models"), "name"); };
  // A long request: 32 inputs of 120 tokens, 30 passes of 128 tokens (four at once: seconds of work).
  json long_ids = json::array();
  for (int i = 0; i < 32; i++) {
    json row = json::array();
    for (int t = 0; t < 120; t++) row.push_back(1 + (i * 37 + t * 11) % 999);
    long_ids.push_back(row);
  }
  auto embed_long = [&](httplib::Client& c, const char* model) {
    return openai_rows(post(c, "/v1/embeddings", {{"input", long_ids}, {"model", model}}));
  };
  std::map<std::string, std::vector<std::vector<float>>> want_long;

  // Each step embeds with one model, then lists the loaded ones (/api/ps reads each loaded GGUF
  // whole for its digest, which makes its pages resident): the same steps in both runs.
  std::map<std::string, std::vector<std::vector<float>>> want;
  auto step = [&](httplib::Client& c, const char* m) {
    const auto rows = embed(c, m);
    return std::make_pair(rows, loaded(c));
  };
  uint64_t base = 0, one = 0, two = 0;
  {
    ServerProcess s("", args);
    REQUIRE(s.running());
    auto c = s.client();
    base = resident_of(s.pid());
    want["a"] = step(c, "a").first;
    one = resident_of(s.pid());
    want["b"] = step(c, "b").first;
    two = resident_of(s.pid());
    const auto [rows, names] = step(c, "c");
    want["c"] = rows;
    CHECK(names.size() == 3);  // no bound: all three stay
    want_long["a"] = embed_long(c, "a");
    want_long["c"] = embed_long(c, "c");
  }
  const uint64_t model = (two - base) / 2;
  INFO("resident: " << base << " without models, " << one << " with one, " << two << " with two");
  REQUIRE(model > 20u << 20);  // each model is resident (its weights are read at load)
  const uint64_t bound = two + model / 2;  // two fit, three do not
  std::vector<std::string> with_bound = args;
  with_bound.insert(with_bound.end(), {"--max-memory", std::to_string(bound)});
  ServerProcess s("", with_bound);
  REQUIRE(s.running());
  auto c = s.client();
  RssSampler sampler(s.pid());
  // After every step (each answered request), the server's RSS is under the bound.
  auto check = [&](const char* m, const std::vector<std::string>& loaded_after) {
    const auto [rows, names] = step(c, m);
    CHECK(rows == want[m]);
    CHECK(names == loaded_after);
    INFO("bound " << bound << "\n" << s.log());
    CHECK(resident_of(s.pid()) <= bound);
  };
  check("a", {"a:latest"});
  check("b", {"a:latest", "b:latest"});
  check("c", {"b:latest", "c:latest"});  // a was the least recently used
  check("b", {"b:latest", "c:latest"});  // now c is
  check("a", {"a:latest", "b:latest"});  // loaded again, in place of c
  CHECK_THAT(s.log(), Catch::Contains("unloaded model 'a'") && Catch::Contains("unloaded model 'c'"));
  check("b", {"a:latest", "b:latest"});  // a is the least recently used now

  // Long requests on a (the least recently used) while c's load needs room: b goes, a stays.
  std::vector<std::future<std::vector<std::vector<float>>>> long_answers;
  for (int k = 0; k < 4; k++)
    long_answers.push_back(std::async(std::launch::async, [&] {
      auto lc = s.client();
      return embed_long(lc, "a");
    }));
  for (int i = 0; i < 2000; i++) {  // until a's requests are inside its scheduler
    if (c.Get("/metrics")->body.find("embed_requests_inside{model=\"a\"} 4") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto c_rows = embed(c, "c");
  // The last long request was still in flight when c was loaded (else this test shows nothing).
  REQUIRE(long_answers.back().wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  CHECK(c_rows == want["c"]);
  CHECK(loaded(c) == std::vector<std::string>{"a:latest", "c:latest"});
  for (auto& f : long_answers) CHECK(f.get() == want_long["a"]);
  // Both loaded models serving long requests and b's load needs room: 503 with Retry-After (it
  // fits once they are done), nothing unloaded; afterwards b loads.
  long_answers.clear();
  const std::vector<std::string> long_models = {"a", "c", "a", "c"};
  for (const std::string& m : long_models)
    long_answers.push_back(std::async(std::launch::async, [&, m] {
      auto lc = s.client();
      return embed_long(lc, m.c_str());
    }));
  for (int i = 0; i < 2000; i++) {
    const std::string body = c.Get("/metrics")->body;
    if (body.find("embed_requests_inside{model=\"a\"} 2") != std::string::npos &&
        body.find("embed_requests_inside{model=\"c\"} 2") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto busy = c.Post("/v1/embeddings", json{{"input", ids}, {"model", "b"}}.dump(), "application/json");
  REQUIRE(long_answers.back().wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(busy->get_header_value("Retry-After") == "1");
  CHECK_THAT(busy->body, Catch::Contains("retry when they are done"));
  CHECK(loaded(c) == std::vector<std::string>{"a:latest", "c:latest"});
  for (size_t k = 0; k < long_answers.size(); k++) CHECK(long_answers[k].get() == want_long[long_models[k]]);
  check("c", {"a:latest", "c:latest"});
  check("b", {"b:latest", "c:latest"});  // room now: a, the least recently used, goes
  sampler.stop();
  INFO("bound " << bound << ", peak " << sampler.peak() << " in " << sampler.samples() << " samples\n" << s.log());
  CHECK(sampler.samples() > 100);
  CHECK(sampler.peak() <= bound);
  // The first load of each model was expected before it happened (estimated from its file).
  // The first load of each model was expected before it happened (estimated from its file: f32
  // weights as stored, plus metadata), and the estimate is close to what was measured.
  {
    const std::string log = s.log();
    const std::regex first_load(R"(loaded model '(\w)' \([^)]*\): (\d+) MiB resident, expected about (\d+) MiB \(estimated from its file\))");
    int estimated = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), first_load); it != std::sregex_iterator(); ++it) {
      const int measured = std::stoi((*it)[2]), expected = std::stoi((*it)[3]);
      INFO("model " << (*it)[1] << ": " << measured << " MiB measured, " << expected << " MiB expected");
      // 2 MiB: the measured delta also holds what the file does not describe (the scheduler's
      // thread, the Api, heap the load left behind).
      CHECK(expected + 2 >= measured);
      CHECK(expected <= measured + measured / 4);
      estimated++;
    }
    CHECK(estimated == 3);  // a, b and c
  }
  CHECK(s.terminate() == 0);

  // A bound that one model does not fit under even alone: 507, naming the bound; nothing loads.
  ServerProcess small("", {"--model", "a=" + files[0]->path, "--max-memory", std::to_string(base + model / 2)});
  REQUIRE(small.running());
  auto sc = small.client();
  RssSampler small_sampler(small.pid());
  const json e = expect_error(sc, "/v1/embeddings", json{{"input", ids}, {"model", "a"}}.dump(), 507, "InsufficientMemory", "model");
  CHECK_THAT(e.at("error").get<std::string>(), Catch::Contains("even alone") && Catch::Contains("--max-memory"));
  CHECK(loaded(sc).empty());
  small_sampler.stop();
  CHECK(small_sampler.peak() <= base + model / 2);
}

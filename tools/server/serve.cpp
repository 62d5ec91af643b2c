// `embed serve MODEL.gguf` (or --model NAME=MODEL, repeated, or --models-file): checks the
// configuration, loads the first model, starts the router (tools/server/router.h: one scheduler
// and Api per loaded model) and the HTTP transport, and on SIGTERM/SIGINT drains (new requests
// get 503, requests in flight finish) and exits 0.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "engine/quantize.h"
#include "engine/scheduler.h"
#include "tools/cli/commands.h"
#include "tools/server/api.h"
#include "tools/server/api_common.h"
#include "tools/server/http.h"
#include "tools/server/router.h"

namespace embed::cli {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

void check_config(const ServeCommand& o, const ModelDescription& d, int64_t max_input) {
  auto bad = [](const std::string& m) { usage_fail(m); };
  if (o.port < 0 || o.port > 65535) bad("--port must be 0..65535");
  if (o.max_concurrent_requests < 1) bad("--max-concurrent-requests must be at least 1");
  if (o.max_client_batch_size < 1) bad("--max-client-batch-size must be at least 1");
  if (o.payload_limit < 64) bad("--payload-limit must be at least 64 bytes");
  if (o.http_threads < 1) bad("--http-threads must be at least 1");
  if (!(o.read_timeout > 0)) bad("--read-timeout must be positive");
  if (!(o.keep_alive_timeout > 0)) bad("--keep-alive-timeout must be positive");
  if (o.keep_alive_requests < 1) bad("--keep-alive-requests must be at least 1");
  if (o.max_input_tokens < 0 || o.max_input_tokens > d.n_ctx)
    bad("--max-input-tokens " + std::to_string(o.max_input_tokens) + " is outside 1.." + std::to_string(d.n_ctx) +
        " (the model's context length)");
  if (o.max_request_tokens < 0) bad("--max-request-tokens must be positive (or 0: no bound)");
  if (o.max_batch_tokens < 1) bad("--max-batch-tokens must be at least 1");
  // A decoder runs a longer input in pieces of --max-batch-tokens (engine/executor.h), except with
  // KV-Embedding (a request that asks for it with such an input gets 413); an encoder cannot.
  if (o.max_batch_tokens < max_input && (!d.causal || o.kv_embedding))
    bad("--max-batch-tokens " + std::to_string(o.max_batch_tokens) + " is below the longest admissible input (" + std::to_string(max_input) +
        " tokens, --max-input-tokens): such an input could never be batched" +
        (d.causal ? " (a KV-Embedding input runs in one pass)" : " (an encoder runs an input in one pass)"));
}

// The defaults of the embedding routes, from --pooling, --precision, --template, --kv-* and --long*; the
// Api checks them against the model.
Request embed_defaults(const ServeCommand& o) {
  Request r;
  r.pooling = parse_pooling_flag(o.pooling);
  if (!o.precision.empty()) r.precision = parse_precision_flag(o.precision);
  if (o.template_given) r.prompt_template = o.prompt_template;
  r.kv_embedding = o.kv_embedding;
  if (!o.kv_layers.empty()) r.kv_layers = parse_kv_layers_flag(o.kv_layers);
  if (!o.kv_bias.empty()) r.kv_bias = parse_kv_bias_flag(o.kv_bias);
  if (!o.long_inputs.empty() && !parse_long_inputs(o.long_inputs, &r.long_inputs))
    usage_fail("unknown --long '" + o.long_inputs + "' (error, chunk)");
  r.long_overlap = o.long_overlap;
  return r;
}

// The model id answers carry by default: ORG/NAME for a Hub name (as TEI's --model-id), else
// the file's or folder's name.
std::string default_model_name(const std::string& model, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(model, ec))
    if (auto hub = parse_hub_name(model)) return hub->repo;
  std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return std::filesystem::is_directory(p, ec) ? p.filename().string() : p.stem().string();
}

// --max-memory: bytes, or a number with K, M, G or T (powers of 1024), optionally followed by B or iB.
uint64_t parse_memory_flag(const std::string& text) {
  const auto bad = [&text]() -> uint64_t {
    usage_fail("--max-memory '" + text + "': expected bytes or a size such as 512M or 8G (K, M, G, T: powers of 1024)");
  };
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return bad();
  }
  std::string unit = text.substr(used);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  double scale = 1;
  if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return bad();
  if (!(v > 0) || v * scale > 1.8e19) return bad();
  return static_cast<uint64_t>(v * scale);
}

struct ModelEntry {
  std::string name, source;
};

// --model NAME=MODEL and the lines of --models-file (NAME=MODEL; blank lines and # comments skipped).
ModelEntry parse_model_entry(const std::string& text, const std::string& where) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usage_fail(where + " '" + text + "': expected NAME=MODEL (a name, '=', then a GGUF file, an HF folder or a Hub name)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<ModelEntry> model_entries(const ServeCommand& o) {
  std::vector<ModelEntry> entries;
  for (const std::string& m : o.models) entries.push_back(parse_model_entry(m, "--model"));
  if (!o.models_file.empty()) {
    std::ifstream in(o.models_file);
    if (!in) usage_fail("--models-file " + o.models_file + ": cannot be read");
    std::string line;
    for (int n = 1; std::getline(in, line); n++) {
      const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      entries.push_back(parse_model_entry(line.substr(b, e - b + 1), "--models-file " + o.models_file + " line " + std::to_string(n) + ":"));
    }
  }
  return entries;
}

}  // namespace

int run_serve(const ServeCommand& o) {
  // Flags and the ranges file first: a mistake there shows before a model loads.
  const Request defaults = embed_defaults(o);
  std::shared_ptr<const QuantizationRanges> ranges;
  if (!o.ranges.empty()) ranges = std::make_shared<const QuantizationRanges>(load_ranges(o.ranges));
  const uint64_t max_memory = o.max_memory.empty() ? 0 : parse_memory_flag(o.max_memory);
  std::vector<ModelEntry> entries = model_entries(o);
  if (o.model.empty() && entries.empty())
    usage_fail("a model is required: embed serve MODEL, or --model NAME=MODEL (repeated), or --models-file FILE");
  if (!o.model_name.empty() && o.model.empty())
    usage_fail("--model-name names the MODEL argument; --model NAME=MODEL names its model itself");
  {
    std::set<std::string> names;
    for (const ModelEntry& e : entries)
      if (!names.insert(e.name).second) usage_fail("model name '" + e.name + "' is given twice (--model, --models-file)");
  }

  server::Metrics metrics;
  // One model's scheduler and Api, with this server's flags; a model they do not fit is refused
  // with the flag named (at startup a usage error; later that model's requests get the message).
  auto load = [&o, &defaults, &ranges, &metrics](const std::string& source, const std::string& given_name) {
    auto loaded = std::make_unique<server::LoadedModel>();
    loaded->model = load_model(source, {o.device, o.threads, o.compat, o.compute_type, o.source});
    const ModelDescription& d = loaded->model->describe();
    const std::string name = given_name.empty() ? default_model_name(source, d.path) : given_name;
    const int64_t max_input = o.max_input_tokens > 0 ? o.max_input_tokens : d.n_ctx;
    check_config(o, d, max_input);
    if (ranges && d.default_pooling == Pooling::Rank)
      usage_fail("--ranges " + o.ranges + ": ranges quantize embeddings, and this model is a reranker (rank pooling)");
    if (ranges && ranges->dims() > d.embedding_dim)
      usage_fail("--ranges " + o.ranges + ": ranges of " + std::to_string(ranges->dims()) + " dimensions, but this model's vectors have " +
                 std::to_string(d.embedding_dim));
    SchedulerOptions so;
    so.max_batch_tokens = o.max_batch_tokens;
    so.interactive_tokens = o.interactive_tokens;
    so.max_requests = o.max_concurrent_requests;
    so.threads = o.threads;
    loaded->scheduler = std::make_unique<Scheduler>(loaded->model, so);
    loaded->scheduler->on_pass([&metrics, name](const PassStats& p) { metrics.pass(name, p.sequences, p.tokens, p.seconds); });
    server::ApiConfig ac;
    ac.model_name = name;
    ac.max_client_batch_size = o.max_client_batch_size;
    ac.auto_truncate = o.auto_truncate;
    ac.split_special = o.split_special;
    ac.max_input_tokens = max_input;
    ac.max_request_tokens = o.max_request_tokens;
    ac.api_key = o.api_key;
    ac.cors_origin = o.cors;
    ac.payload_limit = o.payload_limit;
    ac.tokenization_workers = o.http_threads;
    ac.embed_defaults = defaults;
    ac.ranges = ranges;
    // The Api checks the routes' defaults (--pooling, --precision, --template, --kv-*) against the
    // model: a refusal there is a bad combination of flags, a usage error like the checks above.
    try {
      loaded->api = std::make_unique<server::Api>(loaded->model, *loaded->scheduler, metrics, ac);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::InvalidArgument) usage_fail(e.what());
      throw;
    }
    if (defaults.pooling == Pooling::Cls && d.causal)  // as `embed --pooling cls` warns
      std::fprintf(stderr, "embed serve: warning: --pooling cls on a causal model (%s): %s\n", name.c_str(), kCausalClsPoolingWhy);
    return loaded;
  };

  // The MODEL argument is the first model, loaded now as a single-model server always did (its
  // name needs its resolved path); --model entries load on their first request.
  std::vector<server::ServedModel> served;
  std::unique_ptr<server::LoadedModel> first;
  uint64_t first_resident = 0;
  if (!o.model.empty()) {
    const uint64_t before = server::resident_bytes();
    first = load(o.model, o.model_name);
    first_resident = server::resident_bytes() - std::min(before, server::resident_bytes());
    if (max_memory && server::resident_bytes() > max_memory)
      usage_fail("--max-memory " + o.max_memory + ": the process holds " + std::to_string(server::resident_bytes() >> 20) +
                 " MiB resident with " + o.model + " alone loaded");
    const std::string name = first->api->config().model_name;
    const ModelDescription& d = first->model->describe();
    std::fprintf(stderr, "embed serve: loaded model '%s' (%s, %s): %llu MiB resident\n", name.c_str(), d.arch.c_str(),
                 d.default_pooling == Pooling::Rank ? "reranker" : "embeddings", static_cast<unsigned long long>(first_resident >> 20));
    for (const ModelEntry& e : entries)
      if (e.name == name) usage_fail("model name '" + name + "' is given twice (the MODEL argument and --model / --models-file)");
    served.push_back({name, o.model, [load, source = o.model, name] { return load(source, name); }});
  }
  for (const ModelEntry& e : entries) served.push_back({e.name, e.source, [load, e] { return load(e.source, e.name); }});

  server::RouterConfig rc;
  rc.api_key = o.api_key;
  rc.cors_origin = o.cors;
  rc.max_memory = max_memory;
  server::Router router(std::move(served), metrics, rc);
  if (first) router.adopt(0, std::move(first), first_resident);

  server::HttpOptions ho;
  ho.host = o.host;
  ho.port = o.port;
  ho.payload_limit = o.payload_limit;
  ho.read_timeout = o.read_timeout;
  ho.write_timeout = o.read_timeout;
  ho.keep_alive_timeout = o.keep_alive_timeout;
  ho.keep_alive_requests = o.keep_alive_requests;
  ho.max_connections = o.max_connections > 0 ? o.max_connections : o.max_concurrent_requests + 64;
  ho.threads = o.http_threads;
  ho.refusal = [](const std::string& path, int status, const std::string& type, const std::string& message) {
    return server::error_response(server::ApiError{status, type, message, "", -1}, server::error_shape_of(path));
  };
  server::HttpServer http(ho, router);
  router.set_connections([&] { return http.connections(); });
  router.set_poster([&](std::function<void()> fn) { http.post(std::move(fn)); });
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  bool draining = false, timed_out = false;
  std::chrono::steady_clock::time_point drain_start;
  http.every(0.02, [&] {
    if (!g_stop.load()) return;
    if (!draining) {
      draining = true;
      drain_start = std::chrono::steady_clock::now();
      router.drain();
      std::fprintf(stderr, "embed serve: draining %zu request(s) in flight\n", router.in_flight());
    }
    timed_out = std::chrono::steady_clock::now() - drain_start > std::chrono::duration<double>(o.drain_timeout);
    if ((router.in_flight() == 0 && http.active() == 0) || timed_out) http.stop();
  });
  std::fprintf(stderr, "embed serve: %zu model(s) listening on http://%s:%d\n", router.size(), o.host.c_str(), http.port());
  std::fflush(stderr);
  http.run();
  router.stop();
  if (timed_out) {
    std::fprintf(stderr, "embed serve: stopped after --drain-timeout with requests still in flight\n");
    return kExitFailure;
  }
  std::fprintf(stderr, "embed serve: stopped\n");
  return kExitOk;
}

}  // namespace embed::cli

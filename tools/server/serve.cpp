// `embed serve MODEL.gguf`: checks the configuration, loads the model, starts the scheduler and
// the HTTP transport, and on SIGTERM/SIGINT drains (new requests get 503, requests in flight
// finish) and exits 0.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "engine/quantize.h"
#include "engine/scheduler.h"
#include "tools/cli/commands.h"
#include "tools/server/api.h"
#include "tools/server/http.h"

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

}  // namespace

int run_serve(const ServeCommand& o) {
  // Flags and the ranges file first: a mistake there shows before the model loads.
  const Request defaults = embed_defaults(o);
  std::shared_ptr<const QuantizationRanges> ranges;
  if (!o.ranges.empty()) ranges = std::make_shared<const QuantizationRanges>(load_ranges(o.ranges));
  const std::shared_ptr<const Model> model = load_model(o.model, {o.device, o.threads, o.compat, o.compute_type, o.source});
  const ModelDescription& d = model->describe();
  const int64_t max_input = o.max_input_tokens > 0 ? o.max_input_tokens : d.n_ctx;
  check_config(o, d, max_input);
  if (ranges && d.default_pooling == Pooling::Rank)
    usage_fail("--ranges " + o.ranges + ": ranges quantize embeddings, and this model is a reranker (rank pooling)");
  if (ranges && ranges->dims() > d.embedding_dim)
    usage_fail("--ranges " + o.ranges + ": ranges of " + std::to_string(ranges->dims()) +
                                         " dimensions, but this model's vectors have " + std::to_string(d.embedding_dim));

  SchedulerOptions so;
  so.max_batch_tokens = o.max_batch_tokens;
  so.interactive_tokens = o.interactive_tokens;
  so.max_requests = o.max_concurrent_requests;
  so.threads = o.threads;
  Scheduler scheduler(model, so);
  server::Metrics metrics;
  scheduler.on_pass([&](const PassStats& p) { metrics.pass(p.sequences, p.tokens, p.seconds); });

  server::ApiConfig ac;
  ac.model_name = o.model_name.empty() ? default_model_name(o.model, d.path) : o.model_name;
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
  std::unique_ptr<server::Api> api_owner;
  try {
    api_owner = std::make_unique<server::Api>(model, scheduler, metrics, ac);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::InvalidArgument) usage_fail(e.what());
    throw;
  }
  server::Api& api = *api_owner;
  if (defaults.pooling == Pooling::Cls && d.causal)  // as `embed --pooling cls` warns
    std::fprintf(stderr, "embed serve: warning: --pooling cls on a causal model: %s\n", kCausalClsPoolingWhy);

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
  server::HttpServer http(ho, api);
  api.set_connections([&] { return http.connections(); });
  api.set_poster([&](std::function<void()> fn) { http.post(std::move(fn)); });

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
      api.drain();
      std::fprintf(stderr, "embed serve: draining %zu request(s) in flight\n", api.in_flight());
    }
    timed_out = std::chrono::steady_clock::now() - drain_start > std::chrono::duration<double>(o.drain_timeout);
    if ((api.in_flight() == 0 && http.active() == 0) || timed_out) http.stop();
  });
  std::fprintf(stderr, "embed serve: %s (%s, %s) listening on http://%s:%d\n", ac.model_name.c_str(), d.arch.c_str(),
               d.default_pooling == Pooling::Rank ? "reranker" : "embeddings", o.host.c_str(), http.port());
  std::fflush(stderr);
  http.run();
  scheduler.stop();
  if (timed_out) {
    std::fprintf(stderr, "embed serve: stopped after --drain-timeout with requests still in flight\n");
    return kExitFailure;
  }
  std::fprintf(stderr, "embed serve: stopped\n");
  return kExitOk;
}

}  // namespace embed::cli

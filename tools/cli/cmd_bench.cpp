// `embed bench MODEL INPUT`: how fast the public API embeds an input set (one text per line):
// model load time, batch throughput (texts/s, tokens/s), single-text latency (p50/p99) and peak
// RSS, as text or JSON. Measures Context::embed exactly as users call it (tokenize, forward, pool;
// with --output, the sparse and ColBERT read-outs of the same pass). Each timed pass also reports
// the process's CPU time, for machines shared with other work.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "engine/api.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"

namespace embed::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Nearest-rank percentile (p in (0, 100]) of unsorted samples: the smallest sample with at least
// p% of the samples at or below it. With fewer than 100 samples p99 is the maximum.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double median(const std::vector<double>& v) {
  if (v.empty()) return 0;
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// Resident set size now (VmRSS) in MiB; 0 where /proc is not there.
double current_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      in >> kib;
      return kib / 1024.0;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

// CPU seconds (user + system) this process has used so far, over all its threads.
double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Highest RSS of the process so far (ru_maxrss is in KiB on Linux).
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

Embeddings embed_or_fail(Context& ctx, const std::vector<std::string>& texts, const Request& req, const RunSettings& rs, const std::string& what) {
  auto r = ctx.embed(texts, req, rs);
  if (!r) {
    const Status& s = r.error();
    const std::string at = s.index >= 0 ? " (input text " + std::to_string(s.index + 1) + ")" : "";
    fail(s.kind, what + at + ": " + s.message + (s.code == StatusCode::InputTooLong ? "; use --truncate" : ""));
  }
  return std::move(r).value();
}

struct BatchTimes {
  int64_t tokens = 0;
  double warmup_s = 0;         // the warm-up call: page faults on the weights, scratch growth
  std::vector<double> passes;  // the timed passes after it
  std::vector<double> cpu;     // the process's CPU seconds in each of them
};

// One warm-up call on the first `warmup` texts (all when 0) of `warm`, then `repeat` timed passes
// of the whole input in one embed() call each (embed() batches by batch_tokens itself), or more
// until `min_seconds` have been spent. The warm-up faults the weights in; scratch memory that a
// bigger timed pass still needs is grown inside that pass, as it would be for a user.
BatchTimes time_batches(Context& ctx, const std::vector<std::string>& texts, const std::vector<std::string>& warm,
                        const Request& req, const RunSettings& rs, const BenchCommand& o) {
  BatchTimes t;
  const size_t n_warm = o.warmup > 0 ? std::min(warm.size(), static_cast<size_t>(o.warmup)) : warm.size();
  Clock::time_point t0 = Clock::now();
  embed_or_fail(ctx, std::vector<std::string>(warm.begin(), warm.begin() + static_cast<std::ptrdiff_t>(n_warm)), req, rs, "warm-up call");
  t.warmup_s = seconds_since(t0);
  const Clock::time_point start = Clock::now();
  while (static_cast<int>(t.passes.size()) < o.repeat || seconds_since(start) < o.min_seconds) {
    t0 = Clock::now();
    const double cpu0 = process_cpu_s();
    const Embeddings e = embed_or_fail(ctx, texts, req, rs, "timed pass");
    t.passes.push_back(seconds_since(t0));
    t.cpu.push_back(process_cpu_s() - cpu0);
    if (t.tokens == 0)
      for (int32_t n : e.n_tokens) t.tokens += n;
  }
  return t;
}

struct LatencyTimes {
  std::vector<double> ms;
  int64_t tokens = 0;
};

// Each of the first `n` texts embedded alone (one embed() call per text), after one untimed call.
LatencyTimes time_single_texts(Context& ctx, const std::vector<std::string>& texts, const Request& req, const RunSettings& rs, size_t n) {
  LatencyTimes t;
  if (n == 0) return t;
  embed_or_fail(ctx, {texts[0]}, req, rs, "latency warm-up");
  for (size_t i = 0; i < n; i++) {
    const Clock::time_point t0 = Clock::now();
    const Embeddings e = embed_or_fail(ctx, {texts[i]}, req, rs, "latency text");
    t.ms.push_back(seconds_since(t0) * 1e3);
    t.tokens += e.n_tokens[0];
  }
  return t;
}

nlohmann::json report_json(const BenchCommand& o, const ModelDescription& d, size_t n_texts, double load_s, double rss_load,
                           const BatchTimes& b, const LatencyTimes& l) {
  const double med = median(b.passes);
  nlohmann::json j;
  j["engine"] = "embed";
  j["model"] = d.path;
  j["arch"] = d.arch;
  j["input"] = o.input;
  j["device"] = o.device;
  j["compat"] = o.compat.empty() ? "none" : o.compat;
  // The kernels the backend runs (for the benchmark tables): the CPU level or the device.
  j["isa"] = d.kernels;
  j["compute_type"] = compute_type_name(d.compute_type);
  j["threads"] = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  j["texts"] = n_texts;
  j["tokens"] = b.tokens;
  j["load_s"] = load_s;
  j["rss_after_load_mib"] = rss_load;
  j["warmup_s"] = b.warmup_s;
  j["batch"] = {{"passes_s", b.passes}, {"median_s", med}, {"cpu_s", b.cpu}, {"cpu_median_s", median(b.cpu)},
                {"texts_per_s", med > 0 ? n_texts / med : 0.0}, {"tokens_per_s", med > 0 ? b.tokens / med : 0.0}};
  if (!l.ms.empty())
    j["latency"] = {{"texts", l.ms.size()}, {"tokens_mean", static_cast<double>(l.tokens) / l.ms.size()},
                    {"p50_ms", percentile(l.ms, 50)}, {"p99_ms", percentile(l.ms, 99)}, {"max_ms", percentile(l.ms, 100)}};
  j["peak_rss_mib"] = peak_rss_mib();
  return j;
}

void print_text(const nlohmann::json& j) {
  std::printf("model:      %s (%s, %s pooling), %s, %d thread(s)\n", j["model"].get<std::string>().c_str(),
              j["arch"].get<std::string>().c_str(), j["pooling"].get<std::string>().c_str(), j["device"].get<std::string>().c_str(),
              j["threads"].get<int>());
  std::printf("input:      %s: %zu texts, %lld tokens (%.1f tokens/text)\n", j["input"].get<std::string>().c_str(), j["texts"].get<size_t>(),
              static_cast<long long>(j["tokens"].get<int64_t>()), j["tokens"].get<double>() / j["texts"].get<double>());
  std::printf("load:       %.3f s (model + context), RSS %.1f MiB after load\n", j["load_s"].get<double>(), j["rss_after_load_mib"].get<double>());
  const nlohmann::json& b = j["batch"];
  std::printf("batch:      %.1f texts/s, %.1f tokens/s (median of %zu passes, %.3f s each, %.3f CPU s; warm-up call %.3f s)\n",
              b["texts_per_s"].get<double>(), b["tokens_per_s"].get<double>(), b["passes_s"].size(), b["median_s"].get<double>(),
              b["cpu_median_s"].get<double>(), j["warmup_s"].get<double>());
  if (j.contains("latency")) {
    const nlohmann::json& l = j["latency"];
    std::printf("latency:    p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu single texts, %.1f tokens each on average)\n",
                l["p50_ms"].get<double>(), l["p99_ms"].get<double>(), l["max_ms"].get<double>(), l["texts"].get<size_t>(),
                l["tokens_mean"].get<double>());
  }
  std::printf("peak RSS:   %.1f MiB\n", j["peak_rss_mib"].get<double>());
}

void check_options(const BenchCommand& o) {
  if (o.repeat < 1) usage_fail("--repeat must be at least 1 (got " + std::to_string(o.repeat) + ")");
  if (o.warmup < 0) usage_fail("--warmup must be 0 (all texts) or a number of texts");
  if (o.latency < 0) usage_fail("--latency must be 0 (off) or a number of texts (got " + std::to_string(o.latency) + ")");
  if (o.threads < 0) usage_fail("--threads must be positive (got " + std::to_string(o.threads) + ")");
  if (o.batch_tokens < 0) usage_fail("--batch-tokens must be positive");
  if (o.max_tokens < 0) usage_fail("--max-tokens must be positive");
  if (!(o.min_seconds >= 0)) usage_fail("--min-seconds must be 0 or more");
  if (o.device != "cpu" && o.device != "cuda") usage_fail("unknown --device '" + o.device + "' (cpu, cuda)");
}

}  // namespace

int run_bench(const BenchCommand& o) {
  check_options(o);
  const InputLines in = read_lines(o.input, /*skip_empty=*/true);
  if (in.texts.empty()) fail(ErrorKind::InvalidArgument, (o.input == "-" ? std::string("stdin") : o.input) + ": no text to embed");
  const InputLines warm = o.warmup_input.empty() ? in : read_lines(o.warmup_input, /*skip_empty=*/true);
  if (warm.texts.empty()) fail(ErrorKind::InvalidArgument, o.warmup_input + ": no text for the warm-up call");
  Request req;
  req.max_tokens = o.max_tokens;
  req.truncate = o.truncate;
  req.pooling = parse_pooling_flag(o.pooling);
  if (!o.outputs.empty()) req.outputs = parse_outputs_flag(o.outputs);
  RunSettings rs;
  rs.batch_tokens = o.batch_tokens;

  const Clock::time_point t0 = Clock::now();
  const std::shared_ptr<const Model> model = load_model(o.model, {o.device, o.threads, o.compat, o.compute_type, o.source});
  Context ctx(model, o.threads);
  const double load_s = seconds_since(t0);
  const double rss_load = current_rss_mib();

  const BatchTimes b = time_batches(ctx, in.texts, warm.texts, req, rs, o);
  const LatencyTimes l = time_single_texts(ctx, in.texts, req, rs, std::min<size_t>(static_cast<size_t>(o.latency), in.texts.size()));
  nlohmann::json j = report_json(o, model->describe(), in.texts.size(), load_s, rss_load, b, l);
  j["pooling"] = pooling_name(req.pooling.value_or(model->describe().default_pooling));
  j["outputs"] = {{"dense", req.outputs.dense}, {"sparse", req.outputs.sparse}, {"colbert", req.outputs.colbert}};
  if (o.json) std::printf("%s\n", j.dump().c_str());
  else print_text(j);
  return kExitOk;
}

}  // namespace embed::cli

// Prometheus text rendering of the server's counters, gauges and histograms.
#include "tools/server/metrics.h"

#include <charconv>

namespace embed::server {
namespace {

std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string model_label(const std::string& model) { return "model=\"" + label_value(model) + "\""; }

std::vector<double> powers_of_two(double first, int n) {
  std::vector<double> b;
  for (int i = 0; i < n; i++) b.push_back(first * static_cast<double>(1ull << i));
  return b;
}

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) i++;
  counts_[i]++;
  sum_ += v;
  count_++;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); i++) {
    cumulative += counts_[i];
    out += name + "_bucket{" + labels + ",le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum{" + labels + "} " + number(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

Metrics::PerModel::PerModel()
    : batch_size(powers_of_two(1, 12)),
      batch_tokens(powers_of_two(16, 12)),
      queue_seconds(powers_of_two(0.0005, 16)),
      compute_seconds(powers_of_two(0.0005, 16)),
      pass_seconds(powers_of_two(0.0005, 16)) {}

Metrics::PerModel& Metrics::of(const std::string& model) { return models_.try_emplace(model).first->second; }

void Metrics::request(const std::string& model, const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_[{model, route, status}]++;
}

void Metrics::inputs(const std::string& model, int64_t n_inputs, int64_t n_tokens, int64_t n_truncated) {
  std::lock_guard<std::mutex> lock(mutex_);
  PerModel& m = of(model);
  m.inputs += static_cast<uint64_t>(n_inputs);
  m.tokens += static_cast<uint64_t>(n_tokens);
  m.truncated += static_cast<uint64_t>(n_truncated);
}

void Metrics::pass(const std::string& model, size_t sequences, int64_t tokens, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  PerModel& m = of(model);
  m.batch_size.observe(static_cast<double>(sequences));
  m.batch_tokens.observe(static_cast<double>(tokens));
  m.pass_seconds.observe(seconds);
}

void Metrics::job(const std::string& model, double queue_seconds, double compute_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  PerModel& m = of(model);
  m.queue_seconds.observe(queue_seconds);
  m.compute_seconds.observe(compute_seconds);
}

std::string Metrics::render(const std::vector<ModelGauges>& gauges, size_t connections) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every served model, in the order given, then any other that counted something.
  std::vector<std::pair<std::string, const PerModel*>> models;
  static const PerModel kNone;
  for (const ModelGauges& g : gauges) {
    const auto it = models_.find(g.model);
    models.emplace_back(g.model, it == models_.end() ? &kNone : &it->second);
  }
  for (const auto& [name, m] : models_) {
    bool listed = false;
    for (const ModelGauges& g : gauges) listed = listed || g.model == name;
    if (!listed) models.emplace_back(name, &m);
  }
  std::string o;
  o += "# HELP embed_requests_total HTTP requests answered, by model, route and status code.\n# TYPE embed_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    o += "embed_requests_total{" + model_label(std::get<0>(key)) + ",route=\"" + std::get<1>(key) + "\",status=\"" +
         std::to_string(std::get<2>(key)) + "\"} " + std::to_string(n) + "\n";
  auto counter = [&](const char* name, const char* help, uint64_t PerModel::*field) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n";
    for (const auto& [model, m] : models) o += std::string(name) + "{" + model_label(model) + "} " + std::to_string(m->*field) + "\n";
  };
  counter("embed_inputs_total", "Inputs (texts, token lists, query-document pairs) accepted for computing.", &PerModel::inputs);
  counter("embed_tokens_total", "Tokens of the accepted inputs (after truncation: the tokens computed).", &PerModel::tokens);
  counter("embed_truncated_inputs_total", "Accepted inputs cut to --max-input-tokens (truncate, or --auto-truncate).", &PerModel::truncated);
  auto gauge = [&](const char* name, const char* help, size_t ModelGauges::*field) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
    for (const ModelGauges& g : gauges) o += std::string(name) + "{" + model_label(g.model) + "} " + std::to_string(g.*field) + "\n";
  };
  gauge("embed_queue_depth", "Sequences waiting for a forward pass.", &ModelGauges::queue_depth);
  gauge("embed_requests_inside", "Requests queued or computing.", &ModelGauges::inside);
  o += "# HELP embed_connections Open HTTP connections (of the whole server: a connection is not any one model's).\n"
       "# TYPE embed_connections gauge\nembed_connections " + std::to_string(connections) + "\n";
  auto histogram = [&](const char* name, const char* help, Histogram PerModel::*field) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
    for (const auto& [model, m] : models) (m->*field).render(o, name, model_label(model));
  };
  histogram("embed_batch_size", "Sequences per forward pass.", &PerModel::batch_size);
  histogram("embed_batch_tokens", "Tokens per forward pass.", &PerModel::batch_tokens);
  histogram("embed_pass_seconds", "Time of one forward pass.", &PerModel::pass_seconds);
  histogram("embed_queue_seconds", "Time a request waited for its first forward pass.", &PerModel::queue_seconds);
  histogram("embed_compute_seconds", "Time of the forward passes a request was part of.", &PerModel::compute_seconds);
  return o;
}

}  // namespace embed::server

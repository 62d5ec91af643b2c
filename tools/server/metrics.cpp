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

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); i++) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : batch_size_(powers_of_two(1, 12)),
      batch_tokens_(powers_of_two(16, 12)),
      queue_seconds_(powers_of_two(0.0005, 16)),
      compute_seconds_(powers_of_two(0.0005, 16)),
      pass_seconds_(powers_of_two(0.0005, 16)) {}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_[{route, status}]++;
}

void Metrics::inputs(int64_t n_inputs, int64_t n_tokens, int64_t n_truncated) {
  std::lock_guard<std::mutex> lock(mutex_);
  inputs_ += static_cast<uint64_t>(n_inputs);
  tokens_ += static_cast<uint64_t>(n_tokens);
  truncated_ += static_cast<uint64_t>(n_truncated);
}

void Metrics::pass(size_t sequences, int64_t tokens, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_size_.observe(static_cast<double>(sequences));
  batch_tokens_.observe(static_cast<double>(tokens));
  pass_seconds_.observe(seconds);
}

void Metrics::job(double queue_seconds, double compute_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_seconds_.observe(queue_seconds);
  compute_seconds_.observe(compute_seconds);
}

std::string Metrics::render(size_t queue_depth, size_t inside, size_t connections) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string o;
  o += "# HELP embed_requests_total HTTP requests answered, by route and status code.\n# TYPE embed_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    o += "embed_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  o += "# HELP embed_inputs_total Inputs (texts, token lists, query-document pairs) accepted for computing.\n"
       "# TYPE embed_inputs_total counter\nembed_inputs_total " + std::to_string(inputs_) + "\n";
  o += "# HELP embed_tokens_total Tokens of the accepted inputs (after truncation: the tokens computed).\n"
       "# TYPE embed_tokens_total counter\nembed_tokens_total " + std::to_string(tokens_) + "\n";
  o += "# HELP embed_truncated_inputs_total Accepted inputs cut to --max-input-tokens (truncate, or --auto-truncate).\n"
       "# TYPE embed_truncated_inputs_total counter\nembed_truncated_inputs_total " + std::to_string(truncated_) + "\n";
  o += "# HELP embed_queue_depth Sequences waiting for a forward pass.\n# TYPE embed_queue_depth gauge\nembed_queue_depth " +
       std::to_string(queue_depth) + "\n";
  o += "# HELP embed_requests_inside Requests queued or computing.\n# TYPE embed_requests_inside gauge\nembed_requests_inside " +
       std::to_string(inside) + "\n";
  o += "# HELP embed_connections Open HTTP connections.\n# TYPE embed_connections gauge\nembed_connections " +
       std::to_string(connections) + "\n";
  o += "# HELP embed_batch_size Sequences per forward pass.\n# TYPE embed_batch_size histogram\n";
  batch_size_.render(o, "embed_batch_size");
  o += "# HELP embed_batch_tokens Tokens per forward pass.\n# TYPE embed_batch_tokens histogram\n";
  batch_tokens_.render(o, "embed_batch_tokens");
  o += "# HELP embed_pass_seconds Time of one forward pass.\n# TYPE embed_pass_seconds histogram\n";
  pass_seconds_.render(o, "embed_pass_seconds");
  o += "# HELP embed_queue_seconds Time a request waited for its first forward pass.\n# TYPE embed_queue_seconds histogram\n";
  queue_seconds_.render(o, "embed_queue_seconds");
  o += "# HELP embed_compute_seconds Time of the forward passes a request was part of.\n# TYPE embed_compute_seconds histogram\n";
  compute_seconds_.render(o, "embed_compute_seconds");
  return o;
}

}  // namespace embed::server

// The server's Prometheus metrics (text exposition format 0.0.4): requests by route and status,
// inputs, tokens and truncated inputs, queue depth, and histograms of forward-pass size and
// tokens, queue time and compute time. Thread-safe; rendered on GET /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace embed::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends the _bucket, _sum and _count lines of `name`.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& route, int status);
  // One request's accepted inputs: how many, their tokens (after truncation: the tokens computed),
  // and how many of them were cut to --max-input-tokens.
  void inputs(int64_t n_inputs, int64_t n_tokens, int64_t n_truncated);
  void pass(size_t sequences, int64_t tokens, double seconds);
  void job(double queue_seconds, double compute_seconds);
  // `queue_depth`: sequences waiting; `inside`: requests queued or running.
  std::string render(size_t queue_depth, size_t inside, size_t connections) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t inputs_ = 0, tokens_ = 0, truncated_ = 0;
  Histogram batch_size_, batch_tokens_, queue_seconds_, compute_seconds_, pass_seconds_;
};

}  // namespace embed::server

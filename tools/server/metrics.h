// The server's Prometheus metrics (text exposition format 0.0.4): requests by route and status,
// inputs, tokens and truncated inputs, queue depth, and histograms of forward-pass size and
// tokens, queue time and compute time. One object for the whole server: every sample carries the
// label model="NAME" of the served model it counts (model="" for the server's own routes:
// /v1/models, /api/tags, /api/ps, /metrics). Thread-safe; rendered on GET /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace embed::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends the _bucket, _sum and _count lines of `name`; `labels` (e.g. model="m") go first in each.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  void request(const std::string& model, const std::string& route, int status);
  // One request's accepted inputs: how many, their tokens (after truncation: the tokens computed),
  // and how many of them were cut to --max-input-tokens.
  void inputs(const std::string& model, int64_t n_inputs, int64_t n_tokens, int64_t n_truncated);
  void pass(const std::string& model, size_t sequences, int64_t tokens, double seconds);
  void job(const std::string& model, double queue_seconds, double compute_seconds);
  // The gauges of one served model: `queue_depth` sequences waiting, `inside` requests queued or
  // running (0 for a model not loaded).
  struct ModelGauges {
    std::string model;
    size_t queue_depth = 0, inside = 0;
  };
  // Every served model's samples (those in `gauges`, and any other that has counted something),
  // then the server's open connections.
  std::string render(const std::vector<ModelGauges>& gauges, size_t connections) const;

 private:
  struct PerModel {
    PerModel();
    uint64_t inputs = 0, tokens = 0, truncated = 0;
    Histogram batch_size, batch_tokens, queue_seconds, compute_seconds, pass_seconds;
  };
  PerModel& of(const std::string& model);  // with mutex_ held
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_;  // (model, route, status)
  std::map<std::string, PerModel> models_;
};

}  // namespace embed::server

// Batching across requests (the server's compute side, testable without sockets): a queue in
// front of the executor (engine/executor.h). Every request's sequences go to one queue; one
// compute thread fills forward passes of at most max_batch_tokens tokens from many requests at
// once, in arrival order, and hands each to the executor, which gives each request's RowAssembly
// its rows; a request gets them back in its own order, finished with its own options: the same
// rows as Context::embed with batch_tokens = max_batch_tokens (long_inputs windows, late chunking,
// a decoder's sequence longer than a pass run in pieces of max_batch_tokens). Small requests go
// first, so a short query waits for at most the pass in progress plus one short pass, not for
// bulk clients. Bounded: at most max_requests requests are inside at once; a request's memory goes with it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/api.h"
#include "engine/executor.h"

namespace embed {

struct SchedulerOptions {
  int64_t max_batch_tokens = 16384;  // tokens of one forward pass (TEI's --max-batch-tokens)
  int64_t interactive_tokens = 512;  // requests of at most this many tokens in all go first
  size_t max_requests = 512;         // requests queued or running at once (TEI's --max-concurrent-requests)
  int threads = 0;                   // compute threads (0: the model's default)
};

// What a request gets back: its rows in input order (Embeddings, with each input's tokens after
// truncation in n_tokens and the number of inputs cut to max_tokens in truncated), or an error.
struct JobOutcome {
  std::optional<Status> error;
  Embeddings rows;
  double queue_seconds = 0;    // from submit to its first forward pass
  double compute_seconds = 0;  // forward passes it was part of
};

// One forward pass, for metrics.
struct PassStats {
  size_t sequences = 0;
  int64_t tokens = 0;
  double seconds = 0;
};

class Scheduler {
 public:
  using Done = std::function<void(JobOutcome)>;
  Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& o);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues one request. `done` runs exactly once, on the compute thread, unless submit returns
  // an error: Overloaded when max_requests are inside, InvalidArgument when a sequence is longer
  // than max_batch_tokens and cannot run in pieces (Executor::runs_in_pieces), Unsupported after
  // stop(). Setting *cancelled (a client that went away)
  // drops the request's sequences that have not run yet; `done` then gets an error.
  std::optional<Status> submit(const ResolvedRequest& r, Tokenized t, Done done,
                               std::shared_ptr<const std::atomic<bool>> cancelled = nullptr);

  // Runs for every forward pass (on the compute thread).
  void on_pass(std::function<void(const PassStats&)> observer);
  size_t requests_inside() const;   // queued or running
  size_t queued_sequences() const;  // not yet in a forward pass
  const SchedulerOptions& options() const { return options_; }
  // Finishes every request already queued, then ends the compute thread; later submits fail.
  void stop();

 private:
  struct Job;
  struct Slot {  // one sequence of a pass: its job and its index there
    std::shared_ptr<Job> job;
    size_t index;
  };
  void loop();
  std::vector<Slot> next_pass(std::unique_lock<std::mutex>& lock, std::vector<std::shared_ptr<Job>>& dropped);
  void run_pass(std::vector<Slot>& pass);
  void complete(const std::shared_ptr<Job>& job);

  std::shared_ptr<const Model> model_;
  SchedulerOptions options_;
  Context context_;
  Executor executor_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> interactive_, bulk_;
  size_t inside_ = 0, queued_sequences_ = 0;
  bool stopping_ = false;
  std::function<void(const PassStats&)> observer_;
  std::thread thread_;
};

}  // namespace embed

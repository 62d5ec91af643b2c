// The cross-request scheduler: admission, pass forming (interactive first, then arrival order),
// and handing each pass to the executor, which gives each request's rows to its RowAssembly.
#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>

namespace embed {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

bool same_pass(const PassOptions& a, const PassOptions& b) {
  return a.pooling == b.pooling && a.exclude_special == b.exclude_special && a.keep_hidden == b.keep_hidden && a.kv == b.kv &&
         a.sparse_readout == b.sparse_readout && a.colbert_readout == b.colbert_readout;
}

}  // namespace

struct Scheduler::Job {
  ResolvedRequest request;
  PassOptions pass;
  std::vector<SequenceInput> seqs;
  size_t next = 0;        // first sequence not yet taken into a pass
  size_t unfinished = 0;  // sequences whose rows are not written yet
  bool interactive = false;
  std::unique_ptr<RowAssembly> rows;
  Clock::time_point submitted;
  bool started = false;
  JobOutcome outcome;
  Done done;
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& o)
    : model_(std::move(model)), options_(o), context_(model_, o.threads), executor_(context_.runner(), model_->readout()) {
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::on_pass(std::function<void(const PassStats&)> observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(observer);
}

size_t Scheduler::requests_inside() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return inside_;
}

size_t Scheduler::queued_sequences() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_sequences_;
}

std::optional<Status> Scheduler::submit(const ResolvedRequest& r, Tokenized t, Done done,
                                        std::shared_ptr<const std::atomic<bool>> cancelled) {
  if (t.seqs.empty()) return Status{ErrorKind::InvalidArgument, "no inputs", -1};
  auto job = std::make_shared<Job>();
  job->request = r;
  job->pass = pass_options(r);
  int64_t tokens = 0;
  const bool pieces = executor_.runs_in_pieces(job->pass);
  for (size_t i = 0; i < t.seqs.size(); i++) {
    const int64_t n = static_cast<int64_t>(t.seqs[i].ids.size());
    if (n > options_.max_batch_tokens && !pieces)
      return Status{ErrorKind::InvalidArgument,
                    "input has " + std::to_string(n) + " tokens, more than max_batch_tokens " + std::to_string(options_.max_batch_tokens) +
                        (job->pass.kv.on() ? " (a KV-Embedding input runs in one pass)" : " (a bidirectional model runs an input in one pass)"),
                    static_cast<int64_t>(i)};
    tokens += n;
  }
  job->interactive = tokens <= options_.interactive_tokens;
  job->done = std::move(done);
  job->cancelled = std::move(cancelled);
  job->rows = std::make_unique<RowAssembly>(r, t, model_->readout());
  job->seqs = std::move(t.seqs);
  job->unfinished = job->seqs.size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return Status{ErrorKind::Unsupported, "the server is shutting down", -1, StatusCode::ShuttingDown};
    if (inside_ >= options_.max_requests)
      return Status{ErrorKind::Overloaded, "model is overloaded: " + std::to_string(inside_) + " requests are queued or running", -1};
    job->submitted = Clock::now();
    (job->interactive ? interactive_ : bulk_).push_back(job);
    inside_++;
    queued_sequences_ += job->seqs.size();
  }
  wake_.notify_one();
  return std::nullopt;
}

// Under the lock: drops cancelled requests' waiting sequences (returning the requests that are
// thereby done), then takes the next pass: interactive requests' sequences first, then bulk ones,
// in arrival order, all with the first one's PassOptions, up to the token budget. A pass with
// interactive work takes bulk sequences only up to interactive_tokens, so it stays short. A
// sequence longer than the budget (a decoder's, run in pieces) has a pass to itself.
std::vector<Scheduler::Slot> Scheduler::next_pass(std::unique_lock<std::mutex>& lock, std::vector<std::shared_ptr<Job>>& dropped) {
  for (std::deque<std::shared_ptr<Job>>* q : {&interactive_, &bulk_})
    for (auto it = q->begin(); it != q->end();) {
      Job& j = **it;
      if (!j.cancelled || !j.cancelled->load()) {
        ++it;
        continue;
      }
      const size_t untaken = j.seqs.size() - j.next;
      queued_sequences_ -= untaken;
      j.unfinished -= untaken;
      j.next = j.seqs.size();
      if (!j.outcome.error) j.outcome.error = Status{ErrorKind::InvalidArgument, "the client went away", -1, StatusCode::ClientGone};
      if (j.unfinished == 0) dropped.push_back(*it);
      it = q->erase(it);
    }
  std::vector<Slot> pass;
  if (interactive_.empty() && bulk_.empty()) return pass;
  const PassOptions key = (interactive_.empty() ? bulk_ : interactive_).front()->pass;
  int64_t used = 0;
  // Takes sequences from `q` while they fit in `limit` (a pass always gets at least one).
  auto take = [&](std::deque<std::shared_ptr<Job>>& q, int64_t limit) {
    for (auto it = q.begin(); it != q.end();) {
      Job& j = **it;
      if (!same_pass(j.pass, key)) {
        ++it;
        continue;
      }
      for (; j.next < j.seqs.size(); j.next++) {
        const int64_t n = static_cast<int64_t>(j.seqs[j.next].ids.size());
        if (!pass.empty() && used + n > limit) return;
        pass.push_back(Slot{*it, j.next});
        used += n;
      }
      it = q.erase(it);
    }
  };
  take(interactive_, options_.max_batch_tokens);
  const bool interactive = !pass.empty();
  take(bulk_, interactive ? std::max(used, options_.interactive_tokens) : options_.max_batch_tokens);
  queued_sequences_ -= pass.size();
  (void)lock;
  return pass;
}

void Scheduler::run_pass(std::vector<Slot>& pass) {
  const Clock::time_point start = Clock::now();
  std::vector<PassInput> inputs;
  inputs.reserve(pass.size());
  int64_t tokens = 0;
  for (Slot& s : pass) {
    Job& j = *s.job;
    if (!j.started) {
      j.started = true;
      j.outcome.queue_seconds = seconds_between(j.submitted, start);
    }
    tokens += static_cast<int64_t>(j.seqs[s.index].ids.size());
    inputs.push_back(PassInput{j.rows.get(), s.index, std::move(j.seqs[s.index])});  // the job's copy is not needed again
  }
  std::optional<Status> failure;
  try {
    executor_.run_pass(inputs, pass.front().job->pass, options_.max_batch_tokens);
  } catch (const Error& e) {
    failure = Status{e.kind(), e.what(), -1};
  } catch (const std::bad_alloc&) {
    failure = Status{ErrorKind::OutOfMemory, "out of memory", -1};
  }
  inputs.clear();
  const double seconds = seconds_between(start, Clock::now());
  for (size_t k = 0; k < pass.size(); k++) {
    Job& j = *pass[k].job;
    if (k == 0 || pass[k - 1].job != pass[k].job) j.outcome.compute_seconds += seconds;
    if (failure && !j.outcome.error) j.outcome.error = failure;
  }
  std::function<void(const PassStats&)> observer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    observer = observer_;
  }
  if (observer) observer(PassStats{pass.size(), tokens, seconds});
  std::vector<std::shared_ptr<Job>> finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t k = 0; k < pass.size(); k++)
      if (--pass[k].job->unfinished == 0) finished.push_back(pass[k].job);
  }
  for (const std::shared_ptr<Job>& j : finished) complete(j);
}

void Scheduler::complete(const std::shared_ptr<Job>& job) {
  if (!job->outcome.error) {
    try {
      job->outcome.rows = job->rows->finish(context_.runner());
    } catch (const Error& e) {
      job->outcome.error = Status{e.kind(), e.what(), -1};
    } catch (const std::bad_alloc&) {
      job->outcome.error = Status{ErrorKind::OutOfMemory, "out of memory", -1};
    }
  }
  Done done = std::move(job->done);
  JobOutcome outcome = std::move(job->outcome);
  job->rows.reset();
  done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mutex_);
  inside_--;
}

void Scheduler::loop() {
  for (;;) {
    std::vector<Slot> pass;
    std::vector<std::shared_ptr<Job>> dropped;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !interactive_.empty() || !bulk_.empty(); });
      pass = next_pass(lock, dropped);
      if (pass.empty() && dropped.empty() && stopping_ && interactive_.empty() && bulk_.empty()) return;
    }
    for (const std::shared_ptr<Job>& j : dropped) complete(j);
    if (!pass.empty()) run_pass(pass);
  }
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace embed

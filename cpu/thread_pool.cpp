// ThreadPool: generation counter + a claim word (job, next task) + a count of finished tasks.
// Waiting spins briefly (ops arrive back to back during a forward pass), then sleeps on the
// atomic (C++20 wait/notify, a futex), so an oversubscribed machine does not burn its time
// slices spinning on a descheduled thread; and a job ends when its tasks are done, so the caller
// never waits for a worker that was not scheduled in time to take part.
#include "cpu/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define EMBED_CPU_RELAX() _mm_pause()
#else
#define EMBED_CPU_RELAX() std::this_thread::yield()
#endif

namespace embed::cpu {
namespace {
constexpr int kSpins = 4000;  // a few tens of microseconds
constexpr int64_t kClosed = 0xFFFFFFFF;  // claim_'s index once its job has ended
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Claims and runs tasks of job `job` until none is left. A task is claimed by moving claim_ from
// (job, t) to (job, t + 1) with t < n_tasks_: after its job ends, run() closes the job (index
// kClosed) before it writes the next job's fields, so a worker that read a stale claim_ fails its
// compare-exchange, and one that read the next job's n_tasks_ sees the closed index (the store of
// n_tasks_ is ordered after the close). job_ is read only after a successful claim, while run()
// is still waiting for that task.
void ThreadPool::work_on(uint32_t job) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(c >> 32) != job) return;
    const auto t = static_cast<int64_t>(c & 0xFFFFFFFFu);
    const int64_t n = n_tasks_.load(std::memory_order_acquire);  // this job's, if the claim succeeds
    if (t >= n) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    (*job_)(t);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) done_.notify_one();
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && spins < kSpins; spins++) EMBED_CPU_RELAX();
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    work_on(static_cast<uint32_t>(seen));
  }
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; t++) fn(t);
    return;
  }
  if (n_tasks >= kClosed) {  // more than the claim word's index holds: in jobs that fit
    for (int64_t base = 0; base < n_tasks; base += kClosed - 1)
      run(std::min<int64_t>(kClosed - 1, n_tasks - base), [&](int64_t t) { fn(base + t); });
    return;
  }
  const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  const auto job = static_cast<uint32_t>(generation);
  job_ = &fn;
  done_.store(0, std::memory_order_relaxed);
  n_tasks_.store(n_tasks, std::memory_order_release);
  claim_.store(static_cast<uint64_t>(job) << 32, std::memory_order_release);
  generation_.store(generation, std::memory_order_release);
  generation_.notify_all();
  work_on(job);
  for (int spins = 0; done_.load(std::memory_order_acquire) != n_tasks && spins < kSpins; spins++) EMBED_CPU_RELAX();
  for (int64_t v = done_.load(std::memory_order_acquire); v != n_tasks; v = done_.load(std::memory_order_acquire)) done_.wait(v);
  claim_.store((static_cast<uint64_t>(job) << 32) | kClosed, std::memory_order_release);
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(max_chunks, n_threads_);
  const int64_t per = (n + chunks - 1) / chunks;
  run(chunks, [&](int64_t c) {
    const int64_t b = c * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  });
}

}  // namespace embed::cpu

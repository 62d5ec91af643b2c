// ThreadPool: generation counter + atomic task index. Waiting spins briefly (ops arrive back to
// back during a forward pass), then sleeps on the atomic (C++20 wait/notify, a futex), so an
// oversubscribed machine does not burn its time slices spinning on a descheduled thread.
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

void ThreadPool::work_on_current_job() {
  for (;;) {
    const int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    (*job_)(t);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && spins < kSpins; spins++) EMBED_CPU_RELAX();
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    work_on_current_job();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) active_.notify_one();
  }
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; t++) fn(t);
    return;
  }
  job_ = &fn;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  active_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  work_on_current_job();
  for (int spins = 0; active_.load(std::memory_order_acquire) != 0 && spins < kSpins; spins++) EMBED_CPU_RELAX();
  for (int v = active_.load(std::memory_order_acquire); v != 0; v = active_.load(std::memory_order_acquire)) active_.wait(v);
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

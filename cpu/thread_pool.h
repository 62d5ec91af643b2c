// A small persistent thread pool for the CPU backend. The calling thread takes part in every
// job; workers spin briefly before sleeping so back-to-back small ops do not pay a wake-up. A job
// ends when its tasks are done, not when every worker has checked in: a worker the OS has not
// scheduled yet (a loaded machine) delays nothing unless it claimed a task.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace embed::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // total threads including the caller; >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(task) for every task in [0, n_tasks), spread over the threads; returns when all
  // have finished. Not re-entrant: fn must not call run() on the same pool.
  void run(int64_t n_tasks, const std::function<void(int64_t task)>& fn);

  // Splits [0, n) into contiguous ranges of at least `grain` and calls fn(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop();
  void work_on(uint32_t job);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};  // bumped per job (and at shutdown): wakes the workers
  std::atomic<bool> stop_{false};
  const std::function<void(int64_t)>* job_ = nullptr;
  std::atomic<int64_t> n_tasks_{0};
  // (job number << 32) | the next unclaimed task: a task is claimed by a compare-exchange that
  // names its job, so a worker waking late for a finished job can claim nothing of the next one.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};  // tasks of the current job finished
};

}  // namespace embed::cpu

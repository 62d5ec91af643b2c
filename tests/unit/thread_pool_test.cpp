// cpu::ThreadPool: every task of every job runs exactly once, on any thread count, including jobs
// of different sizes back to back (a worker that wakes late for a finished job must not take part
// in the next one) and jobs where one task is much slower than the rest.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"

using embed::cpu::ThreadPool;

TEST_CASE("thread pool runs every task of every job exactly once", "[thread_pool]") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    // 3,000 jobs of 1..37 tasks in a fixed pseudo-random order: each job's counters must read 1
    // for each of its tasks and nothing outside them when run() returns.
    std::vector<std::atomic<int>> hits(64);
    uint32_t state = 12345;
    int64_t wrong = 0, jobs = 0;
    for (int j = 0; j < 3000; j++) {
      state = state * 1664525u + 1013904223u;
      const int64_t n = 1 + (state >> 16) % 37;
      for (auto& h : hits) h.store(0);
      pool.run(n, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
      for (int64_t t = 0; t < 64; t++) wrong += hits[static_cast<size_t>(t)].load() != (t < n ? 1 : 0);
      jobs++;
    }
    INFO(threads << " threads");
    CHECK(jobs == 3000);
    CHECK(wrong == 0);
  }
}

TEST_CASE("thread pool returns only after its slowest task", "[thread_pool]") {
  ThreadPool pool(4);
  for (int round = 0; round < 20; round++) {
    std::atomic<int> finished{0};
    pool.run(8, [&](int64_t t) {
      if (t == round % 8) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      finished.fetch_add(1);
    });
    CHECK(finished.load() == 8);
  }
}

TEST_CASE("thread pool parallel_for covers the range once in contiguous pieces", "[thread_pool]") {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 5, 16, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    pool.parallel_for(n, 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) seen[static_cast<size_t>(i)].fetch_add(1);
    });
    int64_t once = 0;
    for (auto& s : seen) once += s.load() == 1;
    CHECK(once == n);
  }
}

// ThreadPool: every task exactly once, errors surface in the caller, nested calls do not
// deadlock, and resizing keeps it usable.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "recbole/utils/thread_pool.h"

using recbole::ThreadPool;

namespace {

// Restores the pool size the rest of the test binary expects.
struct PoolSize {
  explicit PoolSize(int threads) : before(ThreadPool::instance().threads()) {
    ThreadPool::instance().set_threads(threads);
  }
  ~PoolSize() { ThreadPool::instance().set_threads(before); }
  int before;
};

}  // namespace

TEST_CASE("the pool runs every task exactly once, on workers in range", "[threads]") {
  for (int threads : {1, 2, 4}) {
    PoolSize size(threads);
    for (int64_t n : {0, 1, 3, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::atomic<int> bad_worker{0};
      // Many small jobs in a row: a lost wake-up or a stale generation would hang or skip here.
      for (int rep = 0; rep < 200; ++rep) {
        recbole::parallel_for(n, [&](int64_t i, int worker) {
          if (worker < 0 || worker >= threads) ++bad_worker;
          ++runs[static_cast<size_t>(i)];
        });
      }
      for (auto& r : runs) REQUIRE(r.load() == 200);
      REQUIRE(bad_worker.load() == 0);
    }
  }
}

TEST_CASE("an exception in a task reaches the caller and the pool stays usable", "[threads]") {
  PoolSize size(3);
  REQUIRE_THROWS_WITH(recbole::parallel_for(100,
                                            [](int64_t i, int) {
                                              if (i == 37) throw std::runtime_error("task 37");
                                            }),
                      "task 37");
  std::atomic<int64_t> sum{0};
  recbole::parallel_for(100, [&](int64_t i, int) { sum += i; });
  REQUIRE(sum.load() == 4950);
}

TEST_CASE("a parallel_for inside a task runs inline instead of deadlocking", "[threads]") {
  PoolSize size(2);
  std::atomic<int64_t> total{0};
  std::atomic<int> not_inline{0};  // Catch2 assertions are not thread-safe: count, check after
  recbole::parallel_for(8, [&](int64_t, int) {
    recbole::parallel_for(10, [&](int64_t j, int worker) {
      if (worker != 0) ++not_inline;
      total += j;
    });
  });
  REQUIRE(total.load() == 8 * 45);
  REQUIRE(not_inline.load() == 0);
}

TEST_CASE("num_threads 0 resolves to the hardware threads, a positive value to itself", "[threads]") {
  REQUIRE(recbole::resolve_num_threads(0) >= 1);
  REQUIRE(recbole::resolve_num_threads(3) == 3);
}

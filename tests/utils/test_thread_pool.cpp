// ThreadPool: every task exactly once, errors surface in the caller, nested calls do not
// deadlock, and resizing keeps it usable.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>
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

TEST_CASE("parallel_for_blocks covers every row once, in blocks fixed by the block size",
          "[threads]") {
  for (int threads : {1, 3}) {
    PoolSize size(threads);
    for (int64_t rows : {0, 1, 63, 64, 65, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(rows));
      std::atomic<int> bad_block{0};
      recbole::parallel_for_blocks(rows, 64, [&](int64_t k, int64_t first, int64_t last) {
        // Block k is [64k, min(rows, 64k + 64)), never empty, whatever the pool size.
        if (first != 64 * k || last != std::min(rows, first + 64) || last <= first) ++bad_block;
        for (int64_t r = first; r < last; ++r) ++hits[static_cast<size_t>(r)];
      });
      REQUIRE(bad_block.load() == 0);
      for (auto& h : hits) REQUIRE(h.load() == 1);
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

TEST_CASE("num_threads 0 resolves to the hardware threads, a positive value to itself",
          "[threads]") {
  REQUIRE(recbole::resolve_num_threads(0) >= 1);
  REQUIRE(recbole::resolve_num_threads(3) == 3);
}

TEST_CASE("run_phases: a phase starts only after the previous one ended on every worker",
          "[threads]") {
  for (int threads : {1, 2, 3}) {
    PoolSize size(threads);
    constexpr int kPhases = 5;
    std::atomic<int> done[kPhases] = {};
    std::atomic<int> early{0}, calls{0};
    for (int rep = 0; rep < 200; ++rep) {
      for (auto& d : done) d = 0;
      ThreadPool::instance().run_phases(kPhases, [&](int, int phase) {
        // Every worker must have finished the previous phase before any starts this one.
        if (phase > 0 && done[phase - 1].load() != threads) ++early;
        ++calls;
        ++done[phase];
      });
    }
    REQUIRE(early.load() == 0);
    REQUIRE(calls.load() == 200 * kPhases * threads);
  }
}

TEST_CASE("run_phases: an exception skips the later phases and reaches the caller", "[threads]") {
  PoolSize size(3);
  std::atomic<int> later{0};
  REQUIRE_THROWS_WITH(ThreadPool::instance().run_phases(3,
                                                        [&](int worker, int phase) {
                                                          if (phase == 1 && worker == 2)
                                                            throw std::runtime_error("w2");
                                                          if (phase == 2) ++later;
                                                        }),
                      "w2");
  REQUIRE(later.load() == 0);
  std::atomic<int> calls{0};
  ThreadPool::instance().run_phases(2, [&](int, int) { ++calls; });
  REQUIRE(calls.load() == 6);
}

TEST_CASE("run_phases inside a task runs inline, phase by phase", "[threads]") {
  PoolSize size(2);
  std::atomic<int> bad{0};
  recbole::parallel_for(4, [&](int64_t, int) {
    int last_phase = 0, count = 0;
    ThreadPool::instance().run_phases(3, [&](int worker, int phase) {
      if (phase < last_phase || worker < 0 || worker >= 2) ++bad;
      last_phase = phase;
      ++count;
    });
    if (count != 6) ++bad;
  });
  REQUIRE(bad.load() == 0);
}

TEST_CASE("blas_kernels names the kernels OpenBLAS runs, as OPENBLAS_CORETYPE forces them",
          "[threads][blas]") {
  const std::string name = recbole::blas_kernels();
  if (dlsym(RTLD_DEFAULT, "openblas_get_num_threads") == nullptr) {
    CHECK(name.empty());  // another BLAS: nothing to name
    return;
  }
  CHECK(!name.empty());
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (forced == nullptr || *forced == '\0') return;  // OpenBLAS's own choice for this CPU
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  CHECK(lower(name) == lower(forced));  // e.g. this workplace's OPENBLAS_CORETYPE=Haswell
}

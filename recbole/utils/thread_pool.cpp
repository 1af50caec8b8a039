#include "recbole/utils/thread_pool.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RECBOLE_CPU_RELAX() _mm_pause()
#else
#define RECBOLE_CPU_RELAX() std::this_thread::yield()
#endif

namespace recbole {

namespace {

// A waiting thread spins (pause, then sched_yield so that any other runnable thread gets the
// core) for up to kSpinTime before it sleeps on a condition variable. Measured on the 2-core
// VM: the serial gap between the jobs of one BPR step is ~50-100 µs, and waking a sleeping
// thread takes about as long, so a short spin left the worker asleep for most jobs and the
// second core idle.
constexpr auto kSpinTime = std::chrono::microseconds(1000);

// Spins until done() or kSpinTime has passed; true when done().
template <typename Done>
bool spin_until(Done done) {
  for (int i = 0; i < 64; ++i) {
    if (done()) return true;
    RECBOLE_CPU_RELAX();
  }
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  while (!done()) {
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
  return true;
}

thread_local bool tl_inside_job = false;

}  // namespace

int resolve_num_threads(int64_t requested) {
  if (requested > 0) return static_cast<int>(std::min<int64_t>(requested, 1024));
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable work_cv;  // workers wait here for a new generation
  std::condition_variable done_cv;  // the caller waits here for pending == 0
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;

  // The current job.
  const std::function<void(int64_t, int)>* fn = nullptr;
  const std::function<void(int)>* per_worker_fn = nullptr;  // set for run_per_worker jobs
  int64_t n_tasks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int> pending{0};  // workers (not the caller) still inside the current job
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  std::mutex run_mutex;  // one job at a time; others run inline

  void work(int worker) {
    tl_inside_job = true;
    if (per_worker_fn != nullptr) {
      try {
        (*per_worker_fn)(worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
      tl_inside_job = false;
      return;
    }
    for (;;) {
      const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n_tasks || failed.load(std::memory_order_relaxed)) break;
      try {
        (*fn)(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
    tl_inside_job = false;
  }

  // `seen`: the generation when the worker was created. Read at thread start instead, a job
  // posted before the thread first ran would be taken for an old one and never joined.
  void worker_loop(int worker, uint64_t seen) {
    for (;;) {
      auto posted = [&] {
        return generation.load(std::memory_order_acquire) != seen || stop.load();
      };
      if (!spin_until(posted)) {
        std::unique_lock<std::mutex> lock(mutex);
        work_cv.wait(lock, posted);
      }
      if (stop.load()) return;
      seen = generation.load(std::memory_order_acquire);
      work(worker);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        done_cv.notify_one();
      }
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
    stop = false;
  }
};

ThreadPool::ThreadPool() : state_(new State) {}

ThreadPool::~ThreadPool() {
  state_->stop_workers();
  delete state_;
}

ThreadPool& ThreadPool::instance() {
  // Never destroyed: worker threads must not be joined during static destruction, which may
  // run while another thread still uses the pool.
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

void ThreadPool::set_threads(int threads) {
  threads = std::max(1, threads);
  if (threads == threads_) return;
  std::lock_guard<std::mutex> lock(state_->run_mutex);
  state_->stop_workers();
  threads_ = threads;
  const uint64_t now = state_->generation.load();
  for (int w = 1; w < threads_; ++w)
    state_->workers.emplace_back([this, w, now] { state_->worker_loop(w, now); });
}

bool ThreadPool::try_begin_parallel() {
  return threads_ > 1 && !tl_inside_job && state_->run_mutex.try_lock();
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  State& s = *state_;
  if (n_tasks == 1 || !try_begin_parallel()) {
    run_inline([&] {
      for (int64_t i = 0; i < n_tasks; ++i) fn(i, 0);
    });
    return;
  }
  std::lock_guard<std::mutex> run_lock(s.run_mutex, std::adopt_lock);
  s.fn = &fn;
  s.per_worker_fn = nullptr;
  s.n_tasks = n_tasks;
  dispatch();
}

void ThreadPool::run_per_worker(const std::function<void(int)>& fn) {
  State& s = *state_;
  if (!try_begin_parallel()) {
    run_inline([&] {
      for (int w = 0; w < threads_; ++w) fn(w);
    });
    return;
  }
  std::lock_guard<std::mutex> run_lock(s.run_mutex, std::adopt_lock);
  s.fn = nullptr;
  s.per_worker_fn = &fn;
  s.n_tasks = threads_;
  dispatch();
}

void ThreadPool::run_phases(int n_phases, const std::function<void(int, int)>& fn) {
  State& s = *state_;
  if (!try_begin_parallel()) {
    run_inline([&] {
      for (int p = 0; p < n_phases; ++p)
        for (int w = 0; w < threads_; ++w) fn(w, p);
    });
    return;
  }
  std::lock_guard<std::mutex> run_lock(s.run_mutex, std::adopt_lock);
  // The barrier: the last worker to arrive at the end of a phase opens the next one.
  std::atomic<int> arrived{0};
  std::atomic<int> open_phase{0};
  const int parties = threads_;
  const std::function<void(int)> body = [&](int worker) {
    for (int p = 0; p < n_phases; ++p) {
      if (p > 0) {
        if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == parties) {
          arrived.store(0, std::memory_order_relaxed);
          open_phase.store(p, std::memory_order_release);
        } else {
          auto opened = [&] {
            return open_phase.load(std::memory_order_acquire) >= p ||
                   s.failed.load(std::memory_order_relaxed);
          };
          while (!spin_until(opened)) {
          }
        }
        if (s.failed.load(std::memory_order_relaxed)) return;
      }
      fn(worker, p);
    }
  };
  s.fn = nullptr;
  s.per_worker_fn = &body;
  s.n_tasks = threads_;
  dispatch();
}

void ThreadPool::run_inline(const std::function<void()>& body) {
  const bool outer = tl_inside_job;
  tl_inside_job = true;
  try {
    body();
  } catch (...) {
    tl_inside_job = outer;
    throw;
  }
  tl_inside_job = outer;
}

void ThreadPool::dispatch() {
  State& s = *state_;
  s.next.store(0, std::memory_order_relaxed);
  s.failed.store(false, std::memory_order_relaxed);
  s.error = nullptr;
  s.pending.store(threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.generation.fetch_add(1, std::memory_order_release);
  }
  s.work_cv.notify_all();
  s.work(0);
  auto finished = [&] { return s.pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished)) {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.done_cv.wait(lock, finished);
  }
  s.fn = nullptr;
  s.per_worker_fn = nullptr;
  if (s.error) std::rethrow_exception(s.error);
}

void parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  ThreadPool::instance().run(n_tasks, fn);
}

void parallel_for_blocks(int64_t rows, int64_t block,
                         const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  parallel_for((rows + block - 1) / block, [&](int64_t k, int /*worker*/) {
    const int64_t first = k * block;
    fn(k, first, std::min(rows, first + block));
  });
}

int set_blas_threads(int threads) {
  // OpenBLAS is what tools/install_deps.sh puts behind libblas.so.3; other BLAS builds lack
  // these symbols and keep their own policy.
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  static const auto set_fn =
      reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  static const auto get_fn =
      reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_fn == nullptr || get_fn == nullptr) return 0;
  const int previous = get_fn();
  if (previous != threads) set_fn(std::max(1, threads));
  return previous;
}

std::string blas_kernels() {
  using NameFn = char* (*)();
  static const auto name_fn =
      reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = name_fn == nullptr ? nullptr : name_fn();
  return name == nullptr ? "" : name;
}

}  // namespace recbole

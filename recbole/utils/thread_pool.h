#pragma once
// ThreadPool: the process's CPU worker threads for recbole's own parallel loops (the fused BPR
// step, the CPU evaluation kernel, fitting ItemKNN / SLIMElastic / ADMMSLIM), and the thread
// policy for the BLAS library underneath libtorch.
//
// Why our own pool rather than libtorch's intra-op threads: on the 2-core VMs libtorch with 2
// intra-op threads made small ops ~35x slower than with 1 (its OpenMP workers spin against the
// main thread), so libtorch keeps 1 thread (key torch_num_threads) and the loops that are worth
// splitting use this pool. Workers are started once and sleep on a condition variable between
// jobs after a short spin (a training step hands out several jobs per millisecond, and waking a
// sleeping thread costs tens of microseconds in a VM).
//
// Results never depend on the number of threads: callers split work into tasks whose results
// are combined in task order, never in completion order.
#include <cstdint>
#include <functional>
#include <string>

namespace recbole {

// The `num_threads` key: 0 → every hardware thread (std::thread::hardware_concurrency()).
int resolve_num_threads(int64_t requested);

class ThreadPool {
 public:
  // The process-wide pool (sized 1 until set_threads is called by the device manager).
  static ThreadPool& instance();

  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Total threads taking part in run(), the caller included (≥ 1). Not while a job runs.
  void set_threads(int threads);
  int threads() const { return threads_; }

  // Runs fn(task, worker) for every task in [0, n_tasks), each exactly once; worker is in
  // [0, threads()) and identifies a thread (for per-thread scratch buffers). The caller works
  // as worker 0 and returns when every task has finished; the first exception thrown by fn is
  // rethrown then. A call made from inside a task, or while another thread's job runs, runs
  // its tasks inline on the calling thread (worker 0 of that nested call).
  void run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn);

  // Runs fn(worker) exactly once on each worker 0 .. threads() − 1, each on its own thread:
  // for work split statically by worker, so that worker w touches the same memory job after
  // job and finds it in its core's cache. Inline (fn(0), fn(1), ... on the caller) when nested.
  void run_per_worker(const std::function<void(int)>& fn);

  // Runs fn(worker, phase) on each worker for phase = 0 .. n_phases − 1, each worker on its own
  // thread as in run_per_worker; a phase starts on any worker only after the previous one has
  // finished on all of them (a spinning barrier: phases microseconds long would lose more to a
  // job dispatch each). Inline (phase by phase, workers in order) when nested. When fn throws,
  // the remaining phases are skipped on every worker and the first exception is rethrown.
  void run_phases(int n_phases, const std::function<void(int, int)>& fn);

 private:
  ThreadPool();
  // True, with the run mutex held, when a job can go to the workers: more than one thread, not
  // called from inside a task, no other thread's job running. Otherwise the caller runs inline.
  bool try_begin_parallel();
  void run_inline(const std::function<void()>& body);
  void dispatch();  // posts the job set in state_ and works on it; the run mutex is held
  struct State;
  State* state_;
  int threads_ = 1;
};

// Convenience: ThreadPool::instance().run(n_tasks, fn).
void parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn);

// fn(k, first, last) for the k-th block [first, last) of `block` rows covering [0, rows), one
// task a block: a row lands in the same block whatever the pool size, so per-block sums taken in
// k order are thread-count independent.
void parallel_for_blocks(int64_t rows, int64_t block,
                         const std::function<void(int64_t, int64_t, int64_t)>& fn);

// Sets the thread count of the BLAS library libtorch calls (OpenBLAS, found at run time with
// dlsym; a no-op for other BLAS builds) and returns the previous count (0 when unknown).
int set_blas_threads(int threads);

// The kernels OpenBLAS runs its products on (openblas_get_corename: "Haswell", "Cooperlake", ...;
// chosen for this CPU when the library loads, or forced by the OPENBLAS_CORETYPE environment
// variable), "" for another BLAS. The run's log names them: on this project's AVX-512 VMs the
// GEMM-bound models train ~1.4x faster on Cooperlake's AVX-512 kernels than on Haswell's AVX2.
std::string blas_kernels();

// Sets BLAS threads for a scope (restores the previous count on exit): the CPU evaluation
// kernel runs one single-threaded GEMM per worker instead of one multi-threaded GEMM whose
// idle OpenBLAS threads would spin against the workers.
class BlasThreadsScope {
 public:
  explicit BlasThreadsScope(int threads) : previous_(set_blas_threads(threads)) {}
  ~BlasThreadsScope() {
    if (previous_ > 0) set_blas_threads(previous_);
  }
  BlasThreadsScope(const BlasThreadsScope&) = delete;
  BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

 private:
  int previous_;
};

}  // namespace recbole

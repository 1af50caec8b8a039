#pragma once
// Progress of a long loop (the batches of a training epoch, the bytes of a download), shown on
// stderr. On a terminal one line is redrawn in place ("\r": label, bar, percentage, count,
// elapsed time, ETA); elsewhere (a log file, a batch job's output) a plain line is printed at
// most once per `line_interval_s`, and a last one at the end when the task printed any (so a
// run of many short epochs adds no lines). Drawing happens on a thread of the reporter, never on
// the caller's: advance() is one relaxed atomic increment, safe from any number of threads.
// Only the process that should draw (rank 0, with show_progress) enables it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace recbole {

struct ProgressOptions {
  std::string label;                // "Train 3", a file name
  int64_t total = 0;                // the count at the end; <= 0: unknown (no percentage, no ETA)
  int64_t done = 0;                 // the count at the start (a resumed epoch or download)
  bool bytes = false;               // counts are bytes: shown as kB / MB / GB, with a rate
  bool enabled = true;              // false: advance() only counts, nothing is ever drawn
  bool keep_at_end = false;         // terminal: end the bar with a newline instead of erasing it
  double line_interval_s = 10;      // plain mode: at most one line per interval
  double redraw_interval_s = 0.25;  // terminal mode: the bar's refresh period
  std::FILE* out = stderr;
  std::optional<bool> terminal;  // how to draw; default: whether `out` is a terminal (isatty)
};

class Progress {
 public:
  explicit Progress(ProgressOptions options);
  // finish().
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts n more (from any thread).
  void advance(int64_t n = 1) { done_.fetch_add(n, std::memory_order_relaxed); }
  // Sets the count (a download's bytes so far), or the total once it is known.
  void set_done(int64_t done) { done_.store(done, std::memory_order_relaxed); }
  void set_total(int64_t total) { total_.store(total, std::memory_order_relaxed); }
  int64_t done() const { return done_.load(std::memory_order_relaxed); }

  // Stops drawing and shows the final state: a terminal bar is erased (or kept, keep_at_end);
  // plain mode prints a last line when it printed any before. Later calls do nothing.
  void finish();

  // One line of progress, without "\r" or newline: "<label>: 45% 120/265, 4.5s elapsed, ETA
  // 5.5s" (plain) or "<label> [#####     ]  45% 120/265 4.5s<5.5s" (bar). For the tests.
  static std::string format(const std::string& label, int64_t done, int64_t total,
                            int64_t start_done, double elapsed_s, bool bytes, bool bar);

 private:
  void run();
  void draw(bool final_state);

  ProgressOptions options_;
  bool drawing_;
  bool terminal_;
  std::atomic<int64_t> done_;
  std::atomic<int64_t> total_;
  std::chrono::steady_clock::time_point start_;
  bool printed_ = false;  // plain mode: a line went out
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace recbole

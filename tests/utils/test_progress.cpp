// The progress reporter (recbole/utils/progress.h).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "recbole/utils/progress.h"

using recbole::Progress;
using recbole::ProgressOptions;

namespace {

// Occurrences of `needle` in `text`.
size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// A temporary FILE* whose text can be read back.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) {}
  ~Capture() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) out.append(buf, n);
    return out;
  }

 private:
  std::FILE* file_;
};

ProgressOptions plain(std::FILE* out, int64_t total, double interval) {
  ProgressOptions o;
  o.label = "Train 0";
  o.total = total;
  o.out = out;
  o.terminal = false;
  o.line_interval_s = interval;
  return o;
}

}  // namespace

TEST_CASE("progress line: percentage, count, elapsed and ETA", "[report][progress]") {
  const std::string line = Progress::format("Train 3", 120, 240, 0, 6.0, false, false);
  CHECK(line == "Train 3: 50% 120/240, 6.0s elapsed, ETA 6.0s");
  // A resumed task's pace counts only what it did itself: 60 in 6 s, 120 to go.
  CHECK(Progress::format("Train 3", 120, 240, 60, 6.0, false, false) ==
        "Train 3: 50% 120/240, 6.0s elapsed, ETA 12s");
  // Unknown total: no percentage, no ETA.
  CHECK(Progress::format("x", 7, 0, 0, 75.0, false, false) == "x: 7, 1m15s elapsed");
  const std::string bar = Progress::format("Train 3", 120, 240, 0, 6.0, false, true);
  CHECK(bar.find("[###############               ]  50% 120/240 6.0s<6.0s") != std::string::npos);
  const std::string bytes = Progress::format("ml-1m.zip", 2600000, 5900000, 0, 2.0, true, false);
  CHECK(bytes == "ml-1m.zip: 44% 2.6 MB / 5.9 MB, 2.0s elapsed, 1.3 MB/s, ETA 2.5s");
}

TEST_CASE("progress, plain mode: a line per interval at most, and one at the end",
          "[report][progress]") {
  Capture out;
  const double interval = 0.05;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Progress p(plain(out.file(), 30, interval));
    for (int k = 0; k < 30; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      p.advance();
    }
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string text = out.text();
  const size_t lines = count(text, "\n");
  CHECK(lines >= 2);                                            // periodic + the end
  CHECK(lines <= static_cast<size_t>(elapsed / interval) + 1);  // at most one per interval
  CHECK(count(text, "\r") == 0);
  CHECK(count(text, "Train 0: ") == lines);
  // The last line is the final state.
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  CHECK(last.rfind("Train 0: 100% 30/30, ", 0) == 0);
}

TEST_CASE("progress, plain mode: a task shorter than one interval prints nothing",
          "[report][progress]") {
  Capture out;
  {
    Progress p(plain(out.file(), 5, 10));
    p.advance(5);
  }
  CHECK(out.text().empty());
}

TEST_CASE("progress: advance() from several threads counts every call", "[report][progress]") {
  Capture out;
  constexpr int kThreads = 4, kEach = 20000;
  {
    Progress p(plain(out.file(), kThreads * kEach, 0.001));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        for (int k = 0; k < kEach; ++k) p.advance();
      });
    for (auto& t : threads) t.join();
    CHECK(p.done() == kThreads * kEach);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // at least one periodic line
  }
  const std::string text = out.text();
  CHECK(count(text, "100% 80000/80000") >= 1);
  // Lines are whole: each starts with the label (no interleaving).
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    CHECK(text.compare(start, 9, "Train 0: ") == 0);
    start = nl + 1;
  }
}

TEST_CASE("progress: disabled, it counts and prints nothing", "[report][progress]") {
  Capture out;
  {
    ProgressOptions o = plain(out.file(), 3, 0.001);
    o.enabled = false;
    Progress p(o);
    p.advance(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(p.done() == 3);
  }
  CHECK(out.text().empty());
}

TEST_CASE("progress, terminal mode: one redrawn line, erased or kept at the end",
          "[report][progress]") {
  for (bool keep : {false, true}) {
    Capture out;
    {
      ProgressOptions o;
      o.label = "download";
      o.total = 10;
      o.out = out.file();
      o.terminal = true;
      o.redraw_interval_s = 0.01;
      o.keep_at_end = keep;
      Progress p(o);
      for (int k = 0; k < 10; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        p.advance();
      }
    }
    const std::string text = out.text();
    CHECK(count(text, "\rdownload [") >= 2);
    CHECK(count(text, "100% 10/10") >= 1);
    if (keep) {
      CHECK(text.back() == '\n');
      CHECK(count(text, "\n") == 1);
    } else {
      CHECK(text.size() >= 4);
      CHECK(text.substr(text.size() - 4) == "\r\033[K");
      CHECK(count(text, "\n") == 0);
    }
  }
}

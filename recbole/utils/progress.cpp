#include "recbole/utils/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace recbole {
namespace {

constexpr int kBarWidth = 30;

std::string duration_text(double s) {
  char buf[32];
  if (s < 10)
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600,
                  static_cast<int>(s) % 3600 / 60);
  return buf;
}

// Decimal units, as the download messages use.
std::string bytes_text(double n) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (n >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", n, units[u]);
  return buf;
}

}  // namespace

Progress::Progress(ProgressOptions options)
    : options_(std::move(options)),
      drawing_(options_.enabled && options_.out != nullptr),
      terminal_(options_.terminal.value_or(options_.out && ::isatty(::fileno(options_.out)))),
      done_(options_.done),
      total_(options_.total),
      start_(std::chrono::steady_clock::now()) {
  if (drawing_) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { finish(); }

std::string Progress::format(const std::string& label, int64_t done, int64_t total,
                             int64_t start_done, double elapsed_s, bool bytes, bool bar) {
  const bool known = total > 0;
  const double fraction = known ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
  char percent[16];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(std::floor(100 * fraction)));
  std::string count = bytes ? bytes_text(double(done)) : std::to_string(done);
  if (known) count += (bytes ? " / " + bytes_text(double(total)) : "/" + std::to_string(total));
  // The time left at the pace so far; a resumed task's pace counts only what it did itself.
  std::string eta;
  if (known && done > start_done && done < total && elapsed_s > 0)
    eta = duration_text(elapsed_s * double(total - done) / double(done - start_done));
  std::string rate;
  if (bytes && elapsed_s > 0) rate = bytes_text(double(done - start_done) / elapsed_s) + "/s";

  std::string line = label;
  if (bar) {
    line += " ";
    if (known) {
      const int filled = static_cast<int>(kBarWidth * fraction);
      line += "[" + std::string(size_t(filled), '#') +
              std::string(size_t(kBarWidth - filled), ' ') + "] " + percent + " ";
    }
    line += count;
    if (!rate.empty()) line += " " + rate;
    line += " " + duration_text(elapsed_s);
    if (!eta.empty()) line += "<" + eta;
    return line;
  }
  line += ": ";
  if (known) line += std::to_string(static_cast<int>(std::floor(100 * fraction))) + "% ";
  line += count + ", " + duration_text(elapsed_s) + " elapsed";
  if (!rate.empty()) line += ", " + rate;
  if (!eta.empty()) line += ", ETA " + eta;
  return line;
}

void Progress::draw(bool final_state) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = format(options_.label, done(), total_.load(std::memory_order_relaxed),
                                  options_.done, elapsed, options_.bytes, terminal_);
  if (terminal_) {
    // "\033[K" clears what a longer previous line left.
    std::fprintf(options_.out, "\r%s\033[K", line.c_str());
    if (final_state) std::fputs(options_.keep_at_end ? "\n" : "\r\033[K", options_.out);
  } else {
    std::fprintf(options_.out, "%s\n", line.c_str());
    printed_ = true;
  }
  std::fflush(options_.out);
}

void Progress::run() {
  const double period = terminal_ ? options_.redraw_interval_s : options_.line_interval_s;
  const auto step = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(period, 0.001)));
  auto next = start_ + step;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
    draw(false);
    // From now, not from the missed time: a late wake-up never draws twice in a row.
    next = std::chrono::steady_clock::now() + step;
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (!drawing_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // A terminal bar that was never drawn (a task shorter than one refresh) is not drawn now:
  // erasing nothing is the same.
  if (terminal_ || printed_) draw(true);
}

}  // namespace recbole

#pragma once
// The clock of every duration the library measures (epochs, evaluations, data loading, writes,
// timeouts): steady, so a change of the wall clock never makes a duration negative.
#include <chrono>

namespace recbole {

using Clock = std::chrono::steady_clock;

// Seconds from `t0` to now.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace recbole

#pragma once
// Process memory readings for benchmarks and logs (Linux: /proc/self/status, else getrusage).
#include <cstdint>

namespace recbole::memory {

// Peak resident set size of this process so far, in bytes (VmHWM; ru_maxrss as a fallback).
int64_t peak_rss_bytes();

// Current resident set size in bytes (VmRSS); 0 where it cannot be read.
int64_t current_rss_bytes();

}  // namespace recbole::memory

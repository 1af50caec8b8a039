#include "recbole/runtime/fast_path.h"

#include <atomic>

namespace recbole {
namespace {

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

}  // namespace

bool fast_paths_enabled() { return enabled_flag().load(std::memory_order_relaxed); }

FastPathGuard::FastPathGuard(bool enabled) : previous_(enabled_flag().exchange(enabled)) {}

FastPathGuard::~FastPathGuard() { enabled_flag().store(previous_); }

}  // namespace recbole

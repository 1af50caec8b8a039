#include "recbole/utils/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace recbole {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP};

void write_stderr(const char* s) {
  ssize_t ignored = ::write(2, s, std::strlen(s));
  (void)ignored;
}

std::atomic<const char*> g_exit_message{nullptr};

void on_signal(int sig) {
  if (const char* message = g_exit_message.load()) {
    write_stderr(message);
    ::_exit(stop_exit_code(sig));
  }
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) return;
  // A second signal: the user does not want to wait for the checkpoint. Only
  // async-signal-safe calls here.
  write_stderr("\nsecond stop signal: exiting at once\n");
  ::_exit(stop_exit_code(sig));
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a blocking read or write interrupted by the first signal resumes; the run
  // stops at its next check, not with an EINTR error from deep inside a library.
  sa.sa_flags = SA_RESTART;
  for (int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
}

ExitOnStop::ExitOnStop(std::string message) : message_("\n" + std::move(message) + "\n") {
  g_exit_message.store(message_.c_str());
}

ExitOnStop::~ExitOnStop() { g_exit_message.store(nullptr); }

int stop_requested() { return g_signal.load(std::memory_order_relaxed); }

void request_stop(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
}

void clear_stop_request() { g_signal.store(0); }

int stop_exit_code(int signal) { return 128 + signal; }

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

}  // namespace recbole

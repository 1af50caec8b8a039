#pragma once
// Stop requests: SIGINT, SIGTERM, SIGUSR1 and SIGHUP ask a run to stop cleanly instead of
// killing it. The first signal only records itself; the trainer looks at the request after
// every batch, writes its checkpoints and returns (recbole_run then exits with 128 + signal).
// A second signal ends the process at once (exit 128 + signal), for a user who does not want
// to wait.
//
// Why these four: SIGINT is Ctrl-C; SIGTERM is kill, Slurm's time limit and preemption, and
// Kubernetes; SIGUSR1 is what `#SBATCH --signal=B:USR1@60` sends before the end of a job;
// SIGHUP is a closed terminal.
//
// The library installs no handler by itself (an application embedding it may have its own):
// command-line tools call install_stop_handlers(); other code may call request_stop() from any
// thread (or from its own handler: it is async-signal-safe).
#include <string>

namespace recbole {

// Installs the handlers (idempotent).
void install_stop_handlers();

// The signal of the first stop request, or 0 when none.
int stop_requested();

// Records a stop request as if `signal` had arrived (async-signal-safe).
void request_stop(int signal);

// Forgets the request (tests; a program that goes on after a clean stop).
void clear_stop_request();

// While an ExitOnStop lives, a stop signal ends the process at once, after writing `message`
// to stderr: for work that cannot stop part-way and has nothing to keep (a model's fit), where
// waiting for its end would keep a scheduler waiting for nothing. Not nested.
class ExitOnStop {
 public:
  explicit ExitOnStop(std::string message);
  ~ExitOnStop();
  ExitOnStop(const ExitOnStop&) = delete;
  ExitOnStop& operator=(const ExitOnStop&) = delete;

 private:
  std::string message_;
};

// 128 + signal: the exit status a shell reports for a process ended by that signal.
int stop_exit_code(int signal);

// "SIGTERM", "SIGINT", ... ("signal N" for others).
const char* signal_name(int signal);

}  // namespace recbole

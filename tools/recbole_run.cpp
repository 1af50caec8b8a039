// recbole_run --model=M --dataset=D [--config_files=a.yaml,b.yaml] [--key=value ...]
// Runs one experiment; `--nproc=N` starts N local processes (ranks) itself. Exit status is
// non-zero on any error, with the message on stderr.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/utils/error.h"
#include "recbole/utils/process_exit.h"
#include "recbole/utils/stop_signal.h"
#include "run/run_recbole.h"
#include "tasks/task_family.h"
#include "tool_flags.h"

extern char** environ;

namespace {

void print_help() {
  std::cout << "usage: recbole_run --model=NAME --dataset=NAME [--config_files=a.yaml,b.yaml] "
               "[--key=value ...]\n\n"
               "  --nproc=N        run N local processes (distributed, Gloo on the CPU)\n"
               "  --nproc=N --world_size=W --offset=K --ip=HOST [--port=P]\n"
               "                   on each of several machines: ranks K..K+N-1 of W here\n"
               "  --result_file=P  write the result as JSON to P\n"
               "  --report=P       write an HTML report of the run to P (recbole_report renders\n"
               "                   one from a result file)\n"
               "  --version        print the version\n\n"
               "models, by task (name, input type, description):\n"
            << recbole::tasks::models_help_text();
  std::cout << "\nconfig keys (--key=value; values are YAML):\n"
            << recbole::config::keys_help_text();
}

// A free TCP port on 127.0.0.1 for the local ranks' store.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

// The ranks started by launch_local_ranks, for the signal handler: a SIGTERM or SIGINT sent to
// the launcher (a job scheduler stopping it, Ctrl-C) reaches them too instead of leaving them
// running as orphans.
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP};  // see stop_signal.h

pid_t g_ranks[1024];
volatile sig_atomic_t g_n_ranks = 0;

// The ranks run in their own process group (see launch_local_ranks), so each signal reaches
// them once, from here: a first one stops them cleanly, a second one at once.
void forward_signal(int sig) {
  for (int i = 0; i < g_n_ranks; ++i) ::kill(g_ranks[i], sig);
}

// Starts `nproc` copies of this program as ranks offset..offset+nproc-1 of `world` and waits for
// all of them. When one
// fails, the others are asked to stop (SIGTERM), then killed after kStopGrace: a dead rank
// never leaves its peers hanging, nor a stopped (SIGSTOP) or wedged one the launcher.
int launch_local_ranks(int nproc, int world, int offset, int port, int argc, char** argv) {
  constexpr auto kStopGrace = std::chrono::seconds(10);
  if (nproc > static_cast<int>(sizeof g_ranks / sizeof g_ranks[0]))
    throw recbole::ConfigError("nproc: at most 1024 local processes, got " + std::to_string(nproc));
  if (port <= 0) port = free_port();  // only when every rank runs here (see nproc_port)
  std::vector<pid_t> pids;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
  // Ctrl-C signals the terminal's whole foreground group: with the ranks in it, each rank would
  // get it twice (from the terminal and from here) and take the second as "exit at once".
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("RECBOLE_RANK=" + std::to_string(offset + rank));
    env_strings.push_back("RECBOLE_LOCAL_RANK=" + std::to_string(rank));
    env_strings.push_back("RECBOLE_WORLD_SIZE=" + std::to_string(world));
    env_strings.push_back("RECBOLE_LOCAL_WORLD_SIZE=" + std::to_string(nproc));
    env_strings.push_back("RECBOLE_LAUNCHER_PID=" + std::to_string(::getpid()));
    if (port > 0) env_strings.push_back("RECBOLE_MASTER_PORT=" + std::to_string(port));
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, &attr, argv, envp.data()) != 0) {
      std::cerr << "recbole_run: cannot start rank " << offset + rank << ": "
                << std::strerror(errno) << "\n";
      for (pid_t p : pids) ::kill(p, SIGTERM);
      return 1;
    }
    pids.push_back(pid);
    g_ranks[g_n_ranks] = pid;
    g_n_ranks = g_n_ranks + 1;
  }
  int failures = 0;
  int stop_code = 0;  // 128 + the signal of the first rank that stopped cleanly
  std::vector<bool> running(pids.size(), true);
  std::chrono::steady_clock::time_point kill_at{};
  for (size_t left = pids.size(); left > 0;) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done < 0 && errno != EINTR) break;
    if (done <= 0) {
      if (failures > 0 && std::chrono::steady_clock::now() > kill_at) {
        for (size_t r = 0; r < pids.size(); ++r)
          if (running[r]) ::kill(pids[r], SIGKILL);
        kill_at = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    --left;
    int rank = 0;
    for (size_t r = 0; r < pids.size(); ++r)
      if (pids[r] == done) rank = static_cast<int>(r), running[r] = false;
    // A rank that stopped cleanly on a stop signal (forwarded from here, or sent to any rank:
    // the ranks agree to stop together) did what was asked.
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    bool stopped = false;
    for (int sig : kStopSignals) stopped = stopped || code == recbole::stop_exit_code(sig);
    if (stopped && !stop_code) stop_code = code;
    const bool ok = code == 0 || stopped;
    if (!ok && failures++ == 0) {
      std::cerr << "recbole_run: rank " << offset + rank << " failed ("
                << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status)))
                << "); stopping the other ranks\n";
      for (size_t r = 0; r < pids.size(); ++r)
        if (running[r]) ::kill(pids[r], SIGTERM);
      kill_at = std::chrono::steady_clock::now() + kStopGrace;
    }
  }
  posix_spawnattr_destroy(&attr);
  if (failures) return 1;
  return stop_code;
}

// A rank started by the launcher stops cleanly when the launcher dies (killed, or its
// terminal gone) instead of training on as an orphan outside its process group.
void stop_with_launcher() {
  const char* launcher = std::getenv("RECBOLE_LAUNCHER_PID");
  if (!launcher) return;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != static_cast<pid_t>(std::atol(launcher))) recbole::request_stop(SIGTERM);
}

// --nproc=N alone starts all the ranks here; with world_size W > N and offset K (RecBole's
// multi-node form, the same command on every machine) it starts ranks K..K+N-1 of W.
struct LocalLaunch {
  int world = 0;
  int offset = 0;
  int port = 0;  // 0: a free local port (all ranks on this machine)
};

LocalLaunch nproc_launch(const recbole::config::Config& config, int64_t nproc) {
  LocalLaunch l;
  const int64_t world = config.get_int("world_size");
  const int64_t offset = config.get_int("offset");
  l.world = static_cast<int>(world > 0 ? world : nproc);
  l.offset = static_cast<int>(offset);
  if (l.world < nproc)
    throw recbole::ConfigError(config.source("world_size") + ": world_size " +
                               std::to_string(world) + " with nproc " + std::to_string(nproc) +
                               ": expected world_size >= nproc (world_size counts the ranks of "
                               "every machine, nproc those of this one), or -1 for nproc");
  if (offset + nproc > l.world)
    throw recbole::ConfigError(
        config.source("offset") + ": offset " + std::to_string(offset) + " with nproc " +
        std::to_string(nproc) + " and world_size " + std::to_string(l.world) +
        ": this machine's ranks " + std::to_string(offset) + ".." +
        std::to_string(offset + nproc - 1) +
        " must lie below world_size; expected offset <= " + std::to_string(l.world - nproc) +
        " (offset = the global rank of this machine's first "
        "process)");
  // The port: the one given, else a free one when every rank runs here (the default 5678 may
  // be taken by another run); across machines every host must name the same port.
  const bool given = config.source("port").rfind("configs/", 0) != 0;
  l.port = given || l.world != nproc ? static_cast<int>(config.get_int("port")) : 0;
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (recbole::tools::answer_help_or_version(argc, argv, "recbole_run", print_help))
      recbole::exit_process(0);
    recbole::config::ConfigSources sources = recbole::config::parse_command_line(argc, argv);
    sources.default_model = "BPR";
    sources.default_dataset = "ml-100k";
    recbole::config::Config config = recbole::config::Config::build(sources);
    const int64_t nproc = config.get_int("nproc");
    if (nproc > 1 && !std::getenv("RECBOLE_RANK")) {
      const LocalLaunch l = nproc_launch(config, nproc);
      recbole::exit_process(
          launch_local_ranks(static_cast<int>(nproc), l.world, l.offset, l.port, argc, argv));
    }
    recbole::install_stop_handlers();
    stop_with_launcher();
    const recbole::RunResult result = recbole::run(config);
    recbole::exit_process(result.interrupted() ? recbole::stop_exit_code(result.stop_signal) : 0);
  } catch (const recbole::Error& e) {
    std::cerr << "recbole_run: error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "recbole_run: internal error: " << e.what() << "\n";
  }
  recbole::exit_process(1);
}

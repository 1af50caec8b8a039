// recbole_run --model=M --dataset=D [--config_files=a.yaml,b.yaml] [--key=value ...]
// Runs one experiment; `--nproc=N` starts N local processes (ranks) itself. Exit status is
// non-zero on any error, with the message on stderr.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/quick_start.h"
#include "recbole/utils/error.h"
#include "recbole/utils/process_exit.h"

extern char** environ;

namespace {

void print_help() {
  std::cout << "usage: recbole_run --model=NAME --dataset=NAME [--config_files=a.yaml,b.yaml] "
               "[--key=value ...]\n\n"
               "  --nproc=N        run N local processes (distributed, Gloo on the CPU)\n"
               "  --result_file=P  write the result as JSON to P\n\nmodels:\n";
  for (const auto& [name, desc] : recbole::models::registered_models())
    std::cout << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') << desc
              << "\n";
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

// Starts `nproc` copies of this program as ranks 0..nproc-1 and waits for all of them. When one
// fails, the others are stopped, so a dead rank never leaves its peers hanging.
int launch_local_ranks(int nproc, int argc, char** argv) {
  const int port = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("RECBOLE_RANK=" + std::to_string(rank));
    env_strings.push_back("RECBOLE_LOCAL_RANK=" + std::to_string(rank));
    env_strings.push_back("RECBOLE_WORLD_SIZE=" + std::to_string(nproc));
    if (port > 0) env_strings.push_back("RECBOLE_MASTER_PORT=" + std::to_string(port));
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0) {
      std::cerr << "recbole_run: cannot start rank " << rank << ": " << std::strerror(errno) << "\n";
      for (pid_t p : pids) ::kill(p, SIGTERM);
      return 1;
    }
    pids.push_back(pid);
  }
  int failures = 0;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t done = ::wait(&status);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && failures++ == 0) {
      int rank = 0;
      for (size_t r = 0; r < pids.size(); ++r)
        if (pids[r] == done) rank = static_cast<int>(r);
      std::cerr << "recbole_run: rank " << rank << " failed ("
                << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status)))
                << "); stopping the other ranks\n";
      for (pid_t p : pids)
        if (p != done) ::kill(p, SIGTERM);
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        print_help();
        recbole::exit_process(0);
      }
    recbole::config::ConfigSources sources = recbole::config::parse_command_line(argc, argv);
    sources.default_model = "BPR";
    sources.default_dataset = "ml-100k";
    recbole::config::Config config = recbole::config::Config::build(sources);
    const int64_t nproc = config.get_int("nproc");
    if (nproc > 1 && !std::getenv("RECBOLE_RANK"))
      recbole::exit_process(launch_local_ranks(static_cast<int>(nproc), argc, argv));
    recbole::run(config);
    recbole::exit_process(0);
  } catch (const recbole::Error& e) {
    std::cerr << "recbole_run: error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "recbole_run: internal error: " << e.what() << "\n";
  }
  recbole::exit_process(1);
}

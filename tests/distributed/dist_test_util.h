#pragma once
// Helpers shared by the distributed tests: child processes (recbole_run, servers) started with
// their own environment and their output in a log file, waits with a deadline, logs, free
// ports, work folders and RecBole's small test dataset.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace recbole::testing {

using Clock = std::chrono::steady_clock;

// The recbole_run binary built with the tests.
inline const std::string kRun = std::string(RECBOLE_TOOLS_DIR) + "/recbole_run";

// A started process and, once waited for, how it ended.
struct Proc {
  pid_t pid = -1;
  std::string log;  // its stdout and stderr
  int rc = -2;      // exit code, 128 + signal, -1 if killed at the deadline; -2 until waited for
  double took = 0;  // seconds from the start of wait_all (or the given time) to its exit
};

// Starts `args` (argv[0] a path) with extra environment variables; stdout+stderr go to `log`.
inline Proc start(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                  const std::string& log) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    const std::string key = s.substr(0, s.find('='));
    // A clean slate: no launcher or Gloo variables leak in from the test's own environment;
    // each test gives the ones it means in `env`.
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "MASTER_ADDR" ||
        key == "MASTER_PORT" || key.rfind("OMPI_", 0) == 0 || key.rfind("SLURM_", 0) == 0 ||
        key.rfind("RECBOLE_", 0) == 0 || key.rfind("GLOO_", 0) == 0)
      continue;
    env_strings.push_back(s);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  Proc p;
  p.log = log;
  REQUIRE(posix_spawn(&p.pid, argv[0], &fa, nullptr, argv.data(), envp.data()) == 0);
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

// Waits for every process, up to `seconds` in all; one still running then is killed (rc -1).
inline void wait_all(std::vector<Proc*> procs, double seconds,
                     Clock::time_point t0 = Clock::now()) {
  const auto deadline = t0 + std::chrono::duration<double>(seconds);
  for (size_t left = procs.size(); left > 0;) {
    for (Proc* p : procs) {
      if (p->rc != -2) continue;
      int status = 0;
      if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
        p->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        p->took = std::chrono::duration<double>(Clock::now() - t0).count();
        --left;
      } else if (Clock::now() > deadline) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, nullptr, 0);
        p->rc = -1;
        p->took = seconds;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Waits up to `seconds` for one process; returns its exit code, or -1 (and kills it) on timeout.
inline int wait_for(Proc& p, double seconds) {
  wait_all({&p}, seconds);
  return p.rc;
}

// The whole content of the file at `path` ("" if it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `text` appears in the file at `path` within `seconds`.
inline bool log_shows(const std::string& path, const std::string& text, int seconds) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (slurp(path).find(text) == std::string::npos) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// How many times `what` occurs in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// An empty folder <temp>/<name>_<pid>, emptied first if a previous run left it.
inline std::string fresh_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// Writes RecBole's test dataset (6016 interactions, 171 users) as `name`.inter in `dir`.
// Its last line's stray fifth field is dropped: recbole-cpp rejects rows with more fields than
// the header, which pandas tolerated.
inline void write_small_dataset(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  std::ifstream in(std::string(RECBOLE_SHARED_DIR) +
                   "/datasets/recbole-tests/test_data/test/test.inter");
  std::ofstream out(dir + "/" + name + ".inter");
  for (std::string line; std::getline(in, line);) {
    size_t pos = 0;
    for (int f = 0; f < 4 && pos != std::string::npos; ++f)
      pos = line.find('\t', pos + (f ? 1 : 0));
    out << (pos == std::string::npos ? line : line.substr(0, pos)) << "\n";
  }
}

}  // namespace recbole::testing

#include "run/experiment/trial_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "recbole/config/config.h"
#include "recbole/config/yaml_scalar.h"
#include "recbole/utils/error.h"
#include "recbole/utils/stop_signal.h"

extern char** environ;

namespace recbole::experiment {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The variables recbole_run's launcher gives its ranks: a trial is a run of its own, whatever
// started recbole_hyper.
constexpr const char* kLauncherVariables[] = {"RECBOLE_RANK=",        "RECBOLE_LOCAL_RANK=",
                                              "RECBOLE_WORLD_SIZE=",  "RECBOLE_LOCAL_WORLD_SIZE=",
                                              "RECBOLE_MASTER_PORT=", "RECBOLE_LAUNCHER_PID="};

std::vector<std::string> trial_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool launcher = false;
    for (const char* v : kLauncherVariables)
      launcher = launcher || std::strncmp(*e, v, std::strlen(v)) == 0;
    if (!launcher) env.emplace_back(*e);
  }
  // recbole_run then asks to be stopped (SIGTERM) when this process dies, even killed: no trial
  // trains on as an orphan.
  env.push_back("RECBOLE_LAUNCHER_PID=" + std::to_string(::getpid()));
  return env;
}

struct Running {
  TrialJob job;
  pid_t pid = -1;
  Clock::time_point start;
};

pid_t spawn(const std::string& exe, const TrialJob& job, const std::vector<std::string>& env) {
  std::vector<std::string> argv_strings = {exe};
  argv_strings.insert(argv_strings.end(), job.args.begin(), job.args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, job.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Its own process group, as recbole_run's ranks: a Ctrl-C at the terminal reaches this
  // process only, which forwards it once (twice would mean "exit at once" to the trial).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw Error("cannot start " + exe + " for trial " + std::to_string(job.id) + ": " +
                std::strerror(rc));
  return pid;
}

bool is_stop_code(int code) {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP})
    if (code == stop_exit_code(sig)) return true;
  return false;
}

TrialOutcome outcome_of(const TrialJob& job, int wait_status, double seconds, bool stopping) {
  TrialOutcome o;
  o.seconds = seconds;
  o.exit_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  nlohmann::json result;
  bool have_result = false;
  std::string parse_error;
  if (std::ifstream in(job.result_file); in) {
    try {
      in >> result;
      have_result = result.is_object();
    } catch (const nlohmann::json::exception& e) {
      parse_error = e.what();
    }
  }
  if (have_result) {
    if (result.contains("best_valid_score") && result["best_valid_score"].is_number())
      o.valid_score = result["best_valid_score"].get<double>();
    if (result.contains("test_result") && result["test_result"].is_object())
      o.test_result = result["test_result"];
  }
  const bool interrupted = have_result && result.value("interrupted", false);
  if (o.exit_code == 0 && have_result && !interrupted) {
    o.status = TrialStatus::kOk;
    return o;
  }
  if (stopping && (is_stop_code(o.exit_code) || interrupted)) {
    o.status = TrialStatus::kInterrupted;
    o.error = std::string("stopped by ") +
              (is_stop_code(o.exit_code) ? signal_name(o.exit_code - 128) : "a stop signal");
    return o;
  }
  o.status = TrialStatus::kFailed;
  o.error = last_line(job.log_file);
  if (o.error.empty()) {
    if (o.exit_code != 0)
      o.error = WIFEXITED(wait_status)
                    ? "exit status " + std::to_string(o.exit_code)
                    : "killed by signal " + std::to_string(WTERMSIG(wait_status));
    else
      o.error = parse_error.empty()
                    ? "no result file " + job.result_file
                    : "unreadable result file " + job.result_file + ": " + parse_error;
  }
  return o;
}

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

const char* status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::kOk:
      return "ok";
    case TrialStatus::kFailed:
      return "failed";
    case TrialStatus::kInterrupted:
      return "interrupted";
  }
  return "?";
}

TrialRunner::TrialRunner(RunnerOptions options) : options_(std::move(options)) {
  if (options_.parallel == 0) options_.parallel = 1;
}

int TrialRunner::run(const std::function<std::optional<TrialJob>()>& next,
                     const std::function<void(const TrialJob&, const TrialOutcome&)>& on_done) {
  const std::vector<std::string> env = trial_environment();
  std::vector<Running> running;
  bool exhausted = false;
  int forwarded = 0;  // the stop signal passed on to the running trials
  while (true) {
    while (!exhausted && !stop_requested() && running.size() < options_.parallel) {
      std::optional<TrialJob> job = next();
      if (!job) {
        exhausted = true;
        break;
      }
      std::error_code ec;
      fs::remove(job->result_file, ec);  // a stale result must not pass for this trial's
      Running r{*job, -1, Clock::now()};
      try {
        r.pid = spawn(options_.recbole_run, r.job, env);
      } catch (const Error& e) {
        TrialOutcome failed;
        failed.error = e.what();
        on_done(r.job, failed);
        continue;
      }
      running.push_back(std::move(r));
    }
    if (running.empty()) break;
    if (const int sig = stop_requested(); sig && !forwarded) {
      for (const Running& r : running) ::kill(r.pid, sig);
      forwarded = sig;
    }
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      int status = 0;
      const pid_t done = ::waitpid(running[i].pid, &status, WNOHANG);
      if (done == running[i].pid) {
        const double seconds =
            std::chrono::duration<double>(Clock::now() - running[i].start).count();
        const Running r = std::move(running[i]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        on_done(r.job, outcome_of(r.job, status, seconds, forwarded != 0 || stop_requested()));
        reaped = true;
      } else {
        ++i;
      }
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return stop_requested();
}

std::string find_recbole_run(const std::string& flag) {
  if (!flag.empty()) {
    if (!executable(flag))
      throw ConfigError("--recbole_run: \"" + flag + "\" is not an executable file");
    return flag;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / "recbole_run"))
    return (self.parent_path() / "recbole_run").string();
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / "recbole_run"))
        return (fs::path(dir) / "recbole_run").string();
  }
  throw ConfigError("--recbole_run: no recbole_run beside this program (" +
                    (ec ? std::string("/proc/self/exe unreadable") : self.parent_path().string()) +
                    ") nor on PATH; expected --recbole_run=PATH");
}

size_t threads_per_trial(size_t parallel) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, cores / std::max<size_t>(1, parallel));
}

void prepare_output_dir(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(flag + ": cannot create the folder \"" + dir + "\": " + ec.message());
  // access(2) says yes to root anywhere; a file actually created says what will happen.
  const fs::path probe = fs::path(dir) / (".write-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0)
    throw ConfigError(flag + ": cannot write in the folder \"" + dir +
                      "\": " + std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
}

bool from_defaults(const config::Config& config, const std::string& key) {
  return config.source(key).rfind("configs/", 0) == 0;
}

std::vector<std::pair<std::string, std::string>> outputs_inside(
    const std::vector<const config::Config*>& configs, const std::string& output_dir) {
  const std::vector<std::pair<std::string, std::string>> inside = {
      {"checkpoint_dir", output_dir + "/saved"},
      {"log_dir", output_dir + "/log"},
      {"checkpoint_keep", "0"}};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : inside) {
    bool all_default = true;
    for (const config::Config* c : configs) all_default = all_default && from_defaults(*c, key);
    if (all_default) out.emplace_back(key, value);
  }
  return out;
}

size_t count_option(const std::map<std::string, std::string>& options, const std::string& flag,
                    size_t fallback) {
  const auto it = options.find(flag);
  if (it == options.end()) return fallback;
  const auto v = config::parse_int(it->second);
  if (!v || *v < 1)
    throw ConfigError("--" + flag + ": expected an integer >= 1, got \"" + it->second + "\"");
  return static_cast<size_t>(*v);
}

std::string default_output_dir(const std::string& prefix, const std::string& name) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return (fs::path(prefix) / (name + "-" + buf)).string();
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json trial_json(size_t id, const nlohmann::json& params, const TrialOutcome& outcome,
                          const std::string& result_file) {
  return {{"id", id},
          {"params", params},
          {"status", status_name(outcome.status)},
          {"error", outcome.error},
          {"valid_score", outcome.valid_score ? nlohmann::json(*outcome.valid_score) : nullptr},
          {"test_result", outcome.test_result},
          {"seconds", outcome.seconds},
          {"result_file", result_file}};
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A progress bar redraws itself with \r: the last piece is what the terminal showed.
    if (const size_t cr = line.rfind('\r'); cr != std::string::npos) line = line.substr(cr + 1);
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
  }
  return last;
}

}  // namespace recbole::experiment

#pragma once
// Running trials: each trial is a separate `recbole_run` process, its stdout and stderr in a
// log file, its result in a JSON file (--result_file, quick_start.h's RunResult::to_json), up
// to `parallel` at once. A trial that fails (non-zero exit, no result file) is recorded with
// its error, the last non-empty line of its log, and the others go on. A stop request
// (stop_signal.h: SIGINT, SIGTERM, ...) is forwarded to the running trials, which stop cleanly;
// no new trial starts.
//
// recbole_hyper records each trial in trials.json (hyper_search.h writes it) as
//   {"id":0,"params":{"learning_rate":0.001,"embedding_size":64},"status":"ok","error":"",
//    "valid_score":0.41,"test_result":{"recall@10":0.2,"ndcg@10":0.3},"seconds":3.2,
//    "result_file":"trials/0.json"}
// inside {"model","dataset","algo","valid_metric":"mrr@10","valid_metric_bigger":true,
// "params":[{"name","kind","args":[-8,0]} | {"name","kind":"choice","values":[32,64]}],
// "started":"2026-11-26T12:00:00Z","seconds","interrupted","parallel","max_evals" (the trials
// planned: --max_evals, or the grid when smaller),"best_trial":3 (null when no trial
// succeeded),"trials":[...]} sorted by id: status is "ok", "failed" or "interrupted",
// valid_score null when the trial has none (trial_json below builds the entry).
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace recbole::config {
class Config;
}

namespace recbole::experiment {

// One recbole_run process.
struct TrialJob {
  size_t id = 0;
  std::vector<std::string> args;  // recbole_run's arguments (argv[1..]), --result_file included
  std::string result_file;        // the path given as --result_file
  std::string log_file;           // stdout and stderr
};

enum class TrialStatus { kOk, kFailed, kInterrupted };

// "ok", "failed", "interrupted".
const char* status_name(TrialStatus s);

struct TrialOutcome {
  TrialStatus status = TrialStatus::kFailed;
  std::string error;                  // "" when ok
  std::optional<double> valid_score;  // the result's best_valid_score
  nlohmann::json test_result = nlohmann::json::object();
  double seconds = 0;  // wall clock of the process
  int exit_code = 0;   // 128 + signal for a process ended by one
};

struct RunnerOptions {
  std::string recbole_run;  // the executable
  size_t parallel = 1;
};

class TrialRunner {
 public:
  explicit TrialRunner(RunnerOptions options);

  // Starts the jobs `next` hands out (called whenever a slot is free, after the finished jobs
  // were reported; nullopt: no more) and reports each finished one to `on_done`, in this thread.
  // Returns when every job has finished, or, after a stop request, when the running ones have
  // stopped: then the signal of the request (0 otherwise).
  int run(const std::function<std::optional<TrialJob>()>& next,
          const std::function<void(const TrialJob&, const TrialOutcome&)>& on_done);

 private:
  RunnerOptions options_;
};

// The recbole_run to start: `flag` when not empty (it must exist), else the one beside this
// executable (/proc/self/exe), else the first on PATH. ConfigError naming --recbole_run when
// there is none.
std::string find_recbole_run(const std::string& flag);

// recbole's threads for each of `parallel` trials: the machine's cores divided among them, at
// least 1.
size_t threads_per_trial(size_t parallel);

// Creates `dir` (with its parents) and checks that a file can be written there, by creating and
// removing one; ConfigError naming `flag` and the folder otherwise.
void prepare_output_dir(const std::string& dir, const std::string& flag);

// Whether `key` of `config` still has the shipped default (its source is configs/...), i.e. the
// user did not set it.
bool from_defaults(const config::Config& config, const std::string& key);

// What every run of a search or comparison gets so that its files stay in `output_dir`:
// checkpoint_dir output_dir/saved, log_dir output_dir/log, checkpoint_keep 0 (a search is not
// resumed run by run), each only where every config of `configs` left the key at its default.
std::vector<std::pair<std::string, std::string>> outputs_inside(
    const std::vector<const config::Config*>& configs, const std::string& output_dir);

// The tool's own option `flag` (from parse_command_line's tool values) as a count >= 1, or
// `fallback` when absent; ConfigError naming --flag otherwise.
size_t count_option(const std::map<std::string, std::string>& options, const std::string& flag,
                    size_t fallback);

// "<prefix>/<name>-YYYYmmdd-HHMMSS" (local time).
std::string default_output_dir(const std::string& prefix, const std::string& name);

// The current UTC time as "2026-11-26T12:00:00Z".
std::string utc_timestamp();

// A trial's entry of trials.json (the schema above); `result_file` as written there (relative to
// the output folder).
nlohmann::json trial_json(size_t id, const nlohmann::json& params, const TrialOutcome& outcome,
                          const std::string& result_file);

// The last non-empty line of a text file ("" when none).
std::string last_line(const std::string& path);

}  // namespace recbole::experiment

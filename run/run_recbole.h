#pragma once
// The C++ API: run a whole experiment (config → dataset → model → train → test) the way
// `recbole_run` does, and get the result back. The parts (config::Config, data::Dataset,
// models::create_model, trainer::Trainer) can also be used on their own; see
// tools/example_api.cpp.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "recbole/utils/atomic_write.h"  // write_file_atomically, for result files

namespace recbole::config {
class Config;
}

namespace recbole {

struct RunTiming {
  double data_s = 0;             // load + preprocess + split
  double train_s_per_epoch = 0;  // mean over epochs (fitted-once models: the fit)
  double eval_s_per_epoch = 0;   // mean over validations
  double total_s = 0;
};

// The dataset after filtering, as the log's summary counts it (ids include the padding id 0),
// and the interactions of each split.
struct DatasetStats {
  int64_t n_users = 0;
  int64_t n_items = 0;
  int64_t n_interactions = 0;
  double sparsity = 0;  // 1 - interactions / (users · items)
  int64_t train = 0;
  int64_t valid = 0;
  int64_t test = 0;
};

// One key of the effective configuration, as the log prints it at the start.
struct ConfigValue {
  std::string section;  // "General Hyper Parameters", ...
  std::string key;
  std::string value;   // YAML text
  std::string source;  // "configs/overall.yaml:12", "--epochs", ...
};

struct RunResult {
  std::string model;
  std::string dataset;
  std::optional<double> best_valid_score;
  bool valid_score_bigger = true;
  std::vector<std::pair<std::string, double>> best_valid_result;
  std::vector<std::pair<std::string, double>> test_result;
  int64_t epochs_run = 0;
  int64_t best_epoch = -1;
  RunTiming timing;
  double peak_rss_mb = 0;
  std::vector<ConfigValue> config;
  DatasetStats dataset_stats;
  // Per epoch: {"epoch","train_loss","train_s","valid_score","valid_result","eval_s"}
  // (trainer::history_to_json).
  nlohmann::json history = nlohmann::json::array();
  // A run stopped by a signal (recbole/utils/stop_signal.h): the signal, and the resume
  // checkpoint to continue from with --resume=PATH. No test was run.
  int stop_signal = 0;
  std::string resume_path;
  bool interrupted() const { return stop_signal != 0; }
  // The best model's checkpoint (empty when none was written): self-contained, for
  // recbole::Recommender (serving/recommender.h) and recbole_recommend / recbole_serve.
  std::string checkpoint;

  // {"model","dataset","best_valid_score","best_valid_result":{...},"test_result":{...},
  //  "epochs_run","best_epoch","history":[...],"timing":{...},"peak_rss_mb","interrupted","checkpoint",
  //  "config":[{"section","key","value","source"}...],"dataset_stats":{"n_users","n_items",
  //  "n_interactions","sparsity","train","valid","test"}}
  // and, when interrupted, "stop_signal" and "resume_checkpoint". The run report
  // (run/report/html_report.h) is rendered from this document.
  nlohmann::json to_json() const;
};

// Builds the config (defaults < model < dataset < config_files < overrides) and runs it.
RunResult run_recbole(const std::string& model, const std::string& dataset,
                      const std::vector<std::string>& config_files = {},
                      const std::vector<std::pair<std::string, std::string>>& overrides = {});

// Runs an experiment from a built config. Rank and world size come from the launcher (see
// detect_dist_settings); a single process never creates a process group. A stop request
// (stop_signal.h) ends training cleanly: the result says interrupted, with the resume
// checkpoint; the `resume` key continues such a run. With `result_file` and `report` set, rank 0
// writes the result as JSON and as an HTML report there (also for a stopped run); both paths are
// checked before any work.
RunResult run(const config::Config& config);

}  // namespace recbole

#pragma once
// Comparing models (recbole_compare): every model is run once per seed (--seed=S), each run a
// recbole_run process of the trial runner (trial_runner.h), and each test metric and the
// seconds per run are aggregated over the successful runs of a model as mean and sample
// standard deviation (n - 1; null with fewer than two runs). compare.json:
//   {"dataset":"ml-100k","seeds":[2020,2021,2022],"metrics":["recall@10","ndcg@10"],
//    "models":[{"model":"BPR","runs":[{"seed":2020,"status":"ok","error":"",
//               "test_result":{"recall@10":0.2},"seconds":1.5}],
//               "mean":{"recall@10":0.2},"sd":{"recall@10":0.01},"seconds_mean":1.5,
//               "seconds_sd":0.1}]}
// with status "ok", "failed" or "interrupted" and error the failed run's last log line;
// "metrics" lists the test metrics of the successful runs in first-seen order. compare.csv has
// one row per model: model, runs that succeeded, then for each metric its mean and sd, then the
// seconds' mean and sd. Both files are rewritten (atomically) after every finished run; each run
// keeps its result and output as runs/<model>-<seed>.json and .log.
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace recbole::experiment {

// The config files of a comparison, from --config_files: groups separated by `;`, each either
// "a.yaml,b.yaml" (for every model) or "MODEL:a.yaml,b.yaml" (for that model only, after the
// common ones), e.g. "common.yaml;BPR:bpr.yaml;EASE:ease.yaml,more.yaml".
struct CompareConfigFiles {
  std::vector<std::string> common;
  std::map<std::string, std::vector<std::string>> per_model;

  // The files of `model`: the common ones, then its own.
  std::vector<std::string> for_model(const std::string& model) const;
};

// Parses --config_files; a "MODEL:" group naming a model not in `models` is a ConfigError.
CompareConfigFiles parse_compare_config_files(const std::string& text,
                                              const std::vector<std::string>& models);

struct CompareOptions {
  std::vector<std::string> models;
  std::string dataset;
  std::vector<int64_t> seeds;
  CompareConfigFiles config_files;
  // --key=value given to every run.
  std::vector<std::pair<std::string, std::string>> overrides;
  size_t parallel = 1;
  size_t num_threads = 1;  // --num_threads of each run unless the overrides set it; 0: none
  std::string output_dir;  // prepared (prepare_output_dir)
  std::string recbole_run;
  // Options for the runs only (checkpoint and log folders inside the output folder).
  std::vector<std::pair<std::string, std::string>> run_only;
};

struct CompareResult {
  nlohmann::json comparison;  // compare.json
  int stop_signal = 0;
};

// Runs every model with every seed (models in order, each model's seeds in order).
CompareResult run_comparison(const CompareOptions& options, std::ostream& out);

// Fills "metrics" and each model's "mean", "sd", "seconds_mean", "seconds_sd" from its "runs".
void aggregate_comparison(nlohmann::json& comparison);

// compare.csv.
std::string comparison_csv(const nlohmann::json& comparison);

// The table printed at the end: a row per model, a column per test metric as "mean ± sd", and
// the seconds per run.
std::string comparison_table(const nlohmann::json& comparison);

}  // namespace recbole::experiment

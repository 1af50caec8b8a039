#pragma once
// A hyper-parameter search (recbole_hyper): proposes configurations (search.h), runs each as a
// recbole_run trial (trial_runner.h) and keeps the outputs of the output folder up to date
// after every finished trial, each written atomically:
//   trials.json  the whole search (schema in trial_runner.h)
//   trials.csv   one row per trial: id, each parameter, the valid score, each test metric,
//                seconds, status, error
//   best.yaml    the best trial's parameters as a config file for --config_files, with a
//                comment naming the trial, its score and the command that reruns it
//   trials/<id>.json, trials/<id>.log   each trial's result file and output
// One line per finished trial goes to `out` as it finishes, and a table of all trials at the end.
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/experiment/search_space.h"

namespace recbole::experiment {

struct HyperSearchOptions {
  std::string model;
  std::string dataset;
  std::vector<std::string> config_files;
  // --key=value given to every trial, in command-line order.
  std::vector<std::pair<std::string, std::string>> overrides;
  SearchSpace space;
  std::string params_file;  // named in best.yaml's comment
  std::string algo = "exhaustive";
  size_t max_evals = 100;
  size_t parallel = 1;
  uint64_t seed = 2020;
  std::string output_dir;
  std::string recbole_run;  // the executable (find_recbole_run)
  // The valid metric as the result files name it ("mrr@10") and its direction.
  std::string valid_metric;
  bool valid_metric_bigger = true;
  // recbole's threads per trial (--num_threads) unless the overrides or the search set them;
  // 0: left to the trials' config.
  size_t num_threads = 1;
  // Options for the trials only, not for a rerun of the best one (the checkpoint and log
  // folders inside the output folder); left out when the overrides or the search set the key.
  std::vector<std::pair<std::string, std::string>> trial_only;
};

struct HyperSearchResult {
  nlohmann::json search;  // trials.json
  int stop_signal = 0;    // the signal that stopped the search, 0 when it ran to its end
};

// Runs the search. The output folder must have been prepared (prepare_output_dir).
HyperSearchResult run_hyper_search(const HyperSearchOptions& options, std::ostream& out);

// trials.csv of a search (trials.json).
std::string trials_csv(const nlohmann::json& search);

// best.yaml of a search, or "" when no trial succeeded. `rerun` is the recbole_run command that
// reruns it, for the comment.
std::string best_yaml(const nlohmann::json& search, const std::string& rerun);

// The table printed at the end: one row per trial, the best marked with `*`.
std::string trials_table(const nlohmann::json& search);

}  // namespace recbole::experiment

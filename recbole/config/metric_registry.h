#pragma once
// The metric registry: one row per metric, with its canonical name, its kind, whether smaller
// is better, and one line of description. It is the one source of these facts: the config
// accepts the names listed here and derives valid_metric_bigger from the rows, the trainer asks
// bigger_is_better(), and the formulas (metrics.cpp for the ranking kinds, value_metrics.cpp for
// kValue) are found by the row's name.
//
// Build area: this file pair is compiled into recbole_core (see CMakeLists.txt), not into
// recbole_evaluator, although it sits beside the formulas so that "where is NDCG?" has one
// answer. The config (core) must ask it, and recbole_evaluator already depends on recbole_core
// (errors, logging); with the table in core the areas stay acyclic. The rows hold facts only, no
// pointers to formulas, so core needs nothing from the evaluator area.
//
// Adding a metric: a row here, its formula in metrics.cpp or value_metrics.cpp under the same
// name; the tests check that every row has a formula.
#include <string>
#include <vector>

namespace recbole::evaluator {

enum class MetricKind {
  kPerUserTopk,  // one value per user and k, averaged over users (Recall, NDCG, ...)
  kGlobalTopk,   // one value per k from all users' lists together (ItemCoverage, GiniIndex, ...)
  kRank,         // one value, no @k, from rank statistics (GAUC)
  kValue,        // one value, no @k, from (score, label) rows of the labeled mode (AUC, LogLoss)
};

struct MetricInfo {
  const char* name;  // canonical spelling, e.g. "ItemCoverage"
  MetricKind kind;
  bool smaller_is_better;
  const char* description;

  // Written `<name>@<k>` (a top-k metric); false for GAUC and the value metrics.
  bool uses_topk() const {
    return kind == MetricKind::kPerUserTopk || kind == MetricKind::kGlobalTopk;
  }
  // Computed from ranked lists (every kind but kValue): the full, uniN and popN modes.
  bool is_ranking() const { return kind != MetricKind::kValue; }
};

// The registry: the ranking metrics in RecBole's documentation order (Recall, MRR, NDCG, Hit,
// Precision, MAP, GAUC, ItemCoverage, AveragePopularity, GiniIndex, ShannonEntropy,
// TailPercentage), then the value metrics (AUC, LogLoss, MAE, RMSE).
const std::vector<MetricInfo>& metric_registry();

// The row of `name` (any case, no "@k"), or nullptr when it is not registered.
const MetricInfo* find_metric(const std::string& name);

// Canonical names of metric_registry(), in its order: every metric, the ranking ones only, or
// the value ones only.
std::vector<std::string> known_metrics();
std::vector<std::string> ranking_metric_names();
std::vector<std::string> value_metric_names();

// Case-insensitive lookup of a metric name (no "@k").
bool is_known_metric(const std::string& name);

// RecBole's rule for valid_metric_bigger: true for AveragePopularity, GiniIndex, LogLoss, MAE
// and RMSE. Case-insensitive; a trailing "@k" is ignored, so "averagepopularity@10" works as a
// valid_metric. Unknown names are bigger-is-better.
bool smaller_is_better(const std::string& name);
// Whether a bigger value of the metric `name` (a valid_metric such as "MRR@10" or "LogLoss") is
// better: !smaller_is_better(name).
inline bool bigger_is_better(const std::string& name) { return !smaller_is_better(name); }

// Names joined by ", " ("Recall, MRR, NDCG"), for messages.
std::string join_names(const std::vector<std::string>& names);

}  // namespace recbole::evaluator

#include "recbole/config/metric_registry.h"

#include "recbole/utils/text.h"

namespace recbole::evaluator {

const std::vector<MetricInfo>& metric_registry() {
  using K = MetricKind;
  static const std::vector<MetricInfo> rows = {
      {"Recall", K::kPerUserTopk, false, "hits in the top k / number of positives"},
      {"MRR", K::kPerUserTopk, false, "1 / rank of the first hit in the top k, else 0"},
      {"NDCG", K::kPerUserTopk, false, "binary-gain DCG@k / ideal DCG over min(P, k) hits"},
      {"Hit", K::kPerUserTopk, false, "1 if the top k holds a positive, else 0"},
      {"Precision", K::kPerUserTopk, false, "hits in the top k / k"},
      {"MAP", K::kPerUserTopk, false, "sum of precision@j at hits j <= k / min(k, P)"},
      {"GAUC", K::kRank, false, "per-user AUC (mid-ranks) weighted by number of positives"},
      {"ItemCoverage", K::kGlobalTopk, false, "distinct recommended items / n_items (with pad)"},
      {"AveragePopularity", K::kPerUserTopk, true, "mean training count of the top-k items"},
      {"GiniIndex", K::kGlobalTopk, true, "Gini coefficient of recommendation counts"},
      {"ShannonEntropy", K::kGlobalTopk, false,
       "entropy of recommendation counts / distinct recommended items"},
      {"TailPercentage", K::kPerUserTopk, false, "share of top-k items in the long tail"},
      {"AUC", K::kValue, false, "area under the ROC curve over all rows (tied scores count half)"},
      {"LogLoss", K::kValue, true, "mean binary cross-entropy, scores clipped to [1e-15, 1-1e-15]"},
      {"MAE", K::kValue, true, "mean absolute difference between score and label"},
      {"RMSE", K::kValue, true, "square root of the mean squared difference of score and label"},
  };
  return rows;
}

const MetricInfo* find_metric(const std::string& name) {
  const std::string lower = to_lower(name);
  for (const MetricInfo& row : metric_registry()) {
    if (to_lower(row.name) == lower) return &row;
  }
  return nullptr;
}

std::vector<std::string> known_metrics() {
  std::vector<std::string> out;
  for (const MetricInfo& row : metric_registry()) out.emplace_back(row.name);
  return out;
}

std::vector<std::string> ranking_metric_names() {
  std::vector<std::string> out;
  for (const MetricInfo& row : metric_registry()) {
    if (row.is_ranking()) out.emplace_back(row.name);
  }
  return out;
}

std::vector<std::string> value_metric_names() {
  std::vector<std::string> out;
  for (const MetricInfo& row : metric_registry()) {
    if (!row.is_ranking()) out.emplace_back(row.name);
  }
  return out;
}

bool is_known_metric(const std::string& name) { return find_metric(name) != nullptr; }

bool smaller_is_better(const std::string& name) {
  const MetricInfo* row = find_metric(name.substr(0, name.find('@')));
  return row != nullptr && row->smaller_is_better;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace recbole::evaluator

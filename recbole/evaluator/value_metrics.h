#pragma once
// Value metrics of RecBole's evaluator (AUC, LogLoss, MAE, RMSE), computed once over every row of
// a split evaluated in the labeled mode: no users, no top-k lists, one (score, label) pair per
// row. Pure C++ (no libtorch): the evaluator copies the model's predictions and the batch labels
// into ValueRecords, possibly on several processes, and hands the appended records to
// compute_value_metrics. Every formula runs in float64 over the float32 inputs, as RecBole's
// numpy code does.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace recbole::evaluator {

// The rows of the labeled mode, in any order (the metrics do not depend on it, up to the
// rounding of sums).
struct ValueRecords {
  std::vector<float> scores;   // [n] the model's prediction (a probability for LogLoss)
  std::vector<float> labels;   // [n] the row's label; AUC's positives are the rows whose label is
                               // exactly 1, every other label a negative; LogLoss, MAE and RMSE
                               // use the label as given (soft labels work)
  std::vector<int64_t> users;  // [n] the row's user (GAUC); empty when not collected

  int64_t size() const { return static_cast<int64_t>(scores.size()); }
  // Concatenates the rows of `other` after ours.
  void append(const ValueRecords& other);
  // Checks that scores and labels have the same length; throws std::invalid_argument.
  void validate() const;
};

// Area under the ROC curve, RecBole's tie rule: rows of equal score enter the curve as one step,
// which equals the Mann-Whitney statistic where a tied (positive, negative) pair counts 1/2:
// (pairs ranked right + 1/2 tied pairs) / (positives * negatives). All scores equal gives 0.5.
// With one class only (no positive or no negative row, or no rows) AUC is undefined: NaN and a
// warning, as RecBole (it raises nothing). A NaN score also gives NaN and a warning.
double auc(const ValueRecords& records);
// Group AUC of the labeled mode: the AUC of each user's rows (ties count half, positives are
// label 1), weighted by the user's positives; users whose rows are all positive or all negative
// are left out (a warning says how many). RecBole's per-user formula from mid-ranks, over the
// labelled rows instead of a ranked item list. NaN (and a warning) when no user is left; throws
// std::invalid_argument when records.users is empty.
double gauc(const ValueRecords& records);
// Mean of -(y log p + (1 - y) log(1 - p)) with p clipped to [1e-15, 1 - 1e-15]. NaN when empty.
double log_loss(const ValueRecords& records);
// Mean of |p - y|. NaN when empty.
double mean_absolute_error(const ValueRecords& records);
// Square root of the mean of (p - y)^2. NaN when empty.
double root_mean_squared_error(const ValueRecords& records);

// Computes every value metric of `metrics` (names in any case, each of the registry's kValue
// rows: AUC, LogLoss, MAE, RMSE, and GAUC, which needs records.users) in the order given, with
// lowercase keys ("auc", "logloss"); a repeated name gives one key (first position). Values are
// rounded to `decimal_place` decimals like Python's round(). Throws recbole::ConfigError for an
// unknown metric, a ranking metric (the message says which mode computes it) or a negative
// decimal_place; std::invalid_argument when the records are inconsistent.
std::vector<std::pair<std::string, double>> compute_value_metrics(
    const std::vector<std::string>& metrics, const ValueRecords& records, int decimal_place);

}  // namespace recbole::evaluator

#include "recbole/evaluator/value_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "recbole/config/metric_registry.h"
#include "recbole/evaluator/metrics.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::evaluator {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// LogLoss clips scores to [kLogLossEps, 1 - kLogLossEps] (RecBole's eps): a saturated wrong score
// costs -log(1e-15) ~ 34.5 instead of infinity.
constexpr double kLogLossEps = 1e-15;

using ValueFn = double (*)(const ValueRecords& records);

// A value formula, named after its row of the registry (metric_registry.cpp).
struct Formula {
  const char* name;
  ValueFn fn;
};

const std::vector<Formula>& formulas() {
  static const std::vector<Formula> table = {
      {"AUC", auc},
      {"LogLoss", log_loss},
      {"MAE", mean_absolute_error},
      {"RMSE", root_mean_squared_error},
  };
  return table;
}

// The formula of a kValue row. A row without a formula is a programming error (std::logic_error).
ValueFn formula_of(const MetricInfo& row) {
  for (const Formula& f : formulas()) {
    if (std::string(f.name) == row.name) return f.fn;
  }
  throw std::logic_error(std::string("metrics: registered value metric ") + row.name +
                         " has no formula in value_metrics.cpp");
}

// Mean over the rows of term(score, label), summed in row order.
template <typename Term>
double mean_of(const ValueRecords& records, Term term) {
  records.validate();
  const int64_t n = records.size();
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += term(records.scores[i], records.labels[i]);
  return sum / static_cast<double>(n);  // NaN when empty, as numpy's mean
}

}  // namespace

void ValueRecords::append(const ValueRecords& other) {
  scores.insert(scores.end(), other.scores.begin(), other.scores.end());
  labels.insert(labels.end(), other.labels.begin(), other.labels.end());
  users.insert(users.end(), other.users.begin(), other.users.end());
}

void ValueRecords::validate() const {
  if (!users.empty() && users.size() != scores.size()) {
    throw std::invalid_argument("ValueRecords: " + std::to_string(scores.size()) + " scores but " +
                                std::to_string(users.size()) + " users");
  }
  if (scores.size() != labels.size()) {
    throw std::invalid_argument("ValueRecords: " + std::to_string(scores.size()) + " scores but " +
                                std::to_string(labels.size()) + " labels");
  }
}

namespace {

// A row of auc(): the score's bits mapped to an unsigned key in the float order (negative
// scores' bits flipped, −0 taken as +0) in bits 1..32, the label (1: positive) in bit 0. Equal
// scores give equal keys >> 1.
uint64_t auc_row(float score, bool positive) {
  score += 0.0f;  // −0 + 0 = +0
  uint32_t bits = 0;
  std::memcpy(&bits, &score, sizeof bits);
  bits = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (uint64_t{bits} << 1) | static_cast<uint64_t>(positive);
}

// Sorts rows by their score key (bits 1..32): a least-significant-digit radix sort of three
// 11-bit digits, a few passes over the rows where a comparison sort of (score, label) pairs
// was ~4 % of an LR run's time (one AUC per validation).
void sort_by_score(std::vector<uint64_t>& rows) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  std::vector<uint64_t> other(rows.size());
  std::vector<size_t> start(kBuckets);
  for (int shift = 1; shift <= 32; shift += kDigitBits) {
    std::fill(start.begin(), start.end(), 0);
    for (uint64_t row : rows) ++start[(row >> shift) & (kBuckets - 1)];
    size_t offset = 0;
    for (size_t& s : start) offset += std::exchange(s, offset);
    for (uint64_t row : rows) other[start[(row >> shift) & (kBuckets - 1)]++] = row;
    rows.swap(other);
  }
}

}  // namespace

double auc(const ValueRecords& records) {
  records.validate();
  const int64_t n = records.size();
  std::vector<uint64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(records.scores[i])) {
      log::warning("AUC: some scores are NaN, so AUC is undefined (nan; null in result files)");
      return kNaN;
    }
    rows[i] = auc_row(records.scores[i], records.labels[i] == 1.0f);
  }
  sort_by_score(rows);
  // Ascending blocks of equal score: a positive ranks above every negative of a lower block and
  // ties with the negatives of its own block (half a pair each). Twice the count stays an
  // integer, exact up to 2^63 pairs.
  int64_t positives = 0, negatives = 0, twice_pairs = 0;
  for (int64_t b = 0; b < n;) {
    int64_t e = b, pos = 0;
    while (e < n && rows[e] >> 1 == rows[b] >> 1) pos += static_cast<int64_t>(rows[e++] & 1);
    const int64_t neg = (e - b) - pos;
    twice_pairs += 2 * pos * negatives + pos * neg;
    positives += pos;
    negatives += neg;
    b = e;
  }
  if (positives == 0) {
    log::warning(
        "AUC: no row has label 1 (no positive), so AUC is undefined (nan; null in "
        "result files)");
    return kNaN;
  }
  if (negatives == 0) {
    log::warning(
        "AUC: every row has label 1 (no negative), so AUC is undefined (nan; null in "
        "result files)");
    return kNaN;
  }
  return static_cast<double>(twice_pairs) /
         (2.0 * static_cast<double>(positives) * static_cast<double>(negatives));
}

double gauc(const ValueRecords& records) {
  records.validate();
  if (records.users.size() != records.scores.size())
    throw std::invalid_argument("GAUC needs the user of every row (ValueRecords::users)");
  const int64_t n = records.size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(records.scores[i])) {
      log::warning("GAUC: some scores are NaN, so GAUC is undefined (nan; null in result files)");
      return kNaN;
    }
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (records.users[a] != records.users[b]) return records.users[a] < records.users[b];
    return records.scores[a] < records.scores[b];
  });
  double weighted = 0.0, weight = 0.0;
  int64_t one_class = 0;
  for (int64_t u = 0; u < n;) {
    int64_t end = u;
    while (end < n && records.users[order[end]] == records.users[order[u]]) ++end;
    // Ascending blocks of equal score, as auc(): pairs ranked right + half the tied pairs.
    int64_t positives = 0, negatives = 0, twice_pairs = 0;
    for (int64_t b = u; b < end;) {
      int64_t e = b, pos = 0;
      while (e < end && records.scores[order[e]] == records.scores[order[b]])
        pos += records.labels[order[e++]] == 1.0f;
      const int64_t neg = (e - b) - pos;
      twice_pairs += 2 * pos * negatives + pos * neg;
      positives += pos;
      negatives += neg;
      b = e;
    }
    if (positives == 0 || negatives == 0) {
      ++one_class;
    } else {
      const double user_auc =
          static_cast<double>(twice_pairs) /
          (2.0 * static_cast<double>(positives) * static_cast<double>(negatives));
      weighted += static_cast<double>(positives) * user_auc;
      weight += static_cast<double>(positives);
    }
    u = end;
  }
  if (one_class > 0)
    log::warning("GAUC: " + std::to_string(one_class) +
                 " users with rows of one label only (all positive or all negative) are left out");
  if (weight == 0.0) {
    log::warning("GAUC: no user has both labels, so GAUC is undefined (nan; null in result files)");
    return kNaN;
  }
  return weighted / weight;
}

double log_loss(const ValueRecords& records) {
  return mean_of(records, [](float score, float label) {
    const double p = std::clamp(static_cast<double>(score), kLogLossEps, 1.0 - kLogLossEps);
    const double y = label;
    return -y * std::log(p) - (1.0 - y) * std::log(1.0 - p);
  });
}

double mean_absolute_error(const ValueRecords& records) {
  return mean_of(records, [](float score, float label) {
    return std::abs(static_cast<double>(score) - static_cast<double>(label));
  });
}

double root_mean_squared_error(const ValueRecords& records) {
  return std::sqrt(mean_of(records, [](float score, float label) {
    const double d = static_cast<double>(score) - static_cast<double>(label);
    return d * d;
  }));
}

std::vector<std::pair<std::string, double>> compute_value_metrics(
    const std::vector<std::string>& metrics, const ValueRecords& records, int decimal_place) {
  if (decimal_place < 0) {
    throw ConfigError("metric_decimal_place: expected int >= 0, got " +
                      std::to_string(decimal_place));
  }
  std::vector<const MetricInfo*> rows;
  for (const std::string& name : metrics) {
    const MetricInfo* row = find_metric(name);
    if (row == nullptr) {
      throw ConfigError("metrics: unknown metric \"" + name +
                        "\"; value metrics: " + join_names(value_metric_names()));
    }
    if (row->kind == MetricKind::kRank) {
      // GAUC: per-user AUC over the labelled rows.
      if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
      continue;
    }
    if (row->is_ranking()) {
      throw ConfigError("metrics: " + std::string(row->name) +
                        " is a ranking metric, computed in the full, uniN and popN evaluation "
                        "modes; the labeled mode computes value metrics only: " +
                        join_names(value_metric_names()));
    }
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
  }
  records.validate();
  std::vector<std::pair<std::string, double>> out;
  for (const MetricInfo* row : rows) {
    const double v = row->kind == MetricKind::kRank ? gauc(records) : formula_of(*row)(records);
    out.emplace_back(to_lower(row->name), python_round(v, decimal_place));
  }
  return out;
}

}  // namespace recbole::evaluator

#include "recbole/evaluator/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::evaluator {

namespace {

// One user's row of the records.
struct UserRow {
  const int32_t* items;  // [max_k]
  const uint8_t* hits;   // [max_k]
  int32_t pos_len;
  int max_k;
};

// What the metric functions share, prepared once per compute_metrics call.
struct Env {
  const MetricContext& ctx;
  int max_k;
  std::vector<double> discount;  // [max_k] 1 / log2(j + 2): NDCG gain of rank j + 1
  std::vector<double> idcg;      // [max_k] running sum of discount (ideal DCG with >= j+1 hits)
  std::vector<uint8_t> is_tail;  // [n_items] TailPercentage's tail set, when asked
};

// Per-user metric: fills out[k - 1] for every k = 1..max_k.
using PerUserFn = void (*)(const UserRow& row, const Env& env, double* out);
// Global top-k metric: one value from the first k slots of every user.
using GlobalFn = double (*)(const RankingRecords& records, const Env& env, int k);
// Rank metric (no @k).
using RankFn = double (*)(const RankingRecords& records);

// The running sums below add in rank order, as numpy's cumsum does, so that the values agree
// with RecBole's to the last bit where the operations allow.

void hit_per_user(const UserRow& row, const Env&, double* out) {
  bool any = false;
  for (int j = 0; j < row.max_k; ++j) {
    any = any || row.hits[j] != 0;
    out[j] = any ? 1.0 : 0.0;
  }
}

void mrr_per_user(const UserRow& row, const Env&, double* out) {
  double reciprocal = 0.0;
  for (int j = 0; j < row.max_k; ++j) {
    if (reciprocal == 0.0 && row.hits[j] != 0) reciprocal = 1.0 / (j + 1);
    out[j] = reciprocal;
  }
}

void recall_per_user(const UserRow& row, const Env&, double* out) {
  // P = 0 gives NaN as in RecBole; such users are never evaluated in full-sort mode.
  int64_t h = 0;
  for (int j = 0; j < row.max_k; ++j) {
    h += row.hits[j] != 0;
    out[j] = static_cast<double>(h) / row.pos_len;
  }
}

void precision_per_user(const UserRow& row, const Env&, double* out) {
  int64_t h = 0;
  for (int j = 0; j < row.max_k; ++j) {
    h += row.hits[j] != 0;
    out[j] = static_cast<double>(h) / (j + 1);
  }
}

void ndcg_per_user(const UserRow& row, const Env& env, double* out) {
  // The ideal list holds min(P, k) hits. RecBole's clamp with P = 0 falls back to the full-K
  // ideal; the DCG is 0 then anyway.
  const int ideal_len = row.pos_len > 0 ? std::min<int64_t>(row.pos_len, row.max_k) : row.max_k;
  double dcg = 0.0;
  for (int j = 0; j < row.max_k; ++j) {
    if (row.hits[j] != 0) dcg += env.discount[j];
    out[j] = dcg / env.idcg[std::min(j, ideal_len - 1)];
  }
}

void map_per_user(const UserRow& row, const Env&, double* out) {
  // Denominator min(k, P); RecBole's clamp with P = 0 divides by max_k (the sum is 0 then).
  const int64_t norm_len = row.pos_len > 0 ? std::min<int64_t>(row.pos_len, row.max_k) : row.max_k;
  int64_t h = 0;
  double sum_precision = 0.0;
  for (int j = 0; j < row.max_k; ++j) {
    h += row.hits[j] != 0;
    if (row.hits[j] != 0) sum_precision += static_cast<double>(h) / (j + 1);
    const int64_t denominator = row.pos_len > 0 ? std::min<int64_t>(j + 1, norm_len) : norm_len;
    out[j] = sum_precision / static_cast<double>(denominator);
  }
}

void average_popularity_per_user(const UserRow& row, const Env& env, double* out) {
  const auto& count = env.ctx.item_train_count;
  int64_t sum = 0;
  for (int j = 0; j < row.max_k; ++j) {
    const int32_t item = row.items[j];
    // -1 (no candidate) and ids beyond the training counts count as popularity 0.
    if (item >= 0 && static_cast<size_t>(item) < count.size()) sum += count[item];
    out[j] = static_cast<double>(sum) / (j + 1);
  }
}

void tail_percentage_per_user(const UserRow& row, const Env& env, double* out) {
  int64_t in_tail = 0;
  for (int j = 0; j < row.max_k; ++j) {
    const int32_t item = row.items[j];
    if (item >= 0 && static_cast<size_t>(item) < env.is_tail.size()) in_tail += env.is_tail[item];
    out[j] = static_cast<double>(in_tail) / (j + 1);
  }
}

// How often each item occurs in the first k slots over all users; -1 slots are skipped.
// `first_seen` receives the distinct items in order of first occurrence (row-major), the order in
// which RecBole's Counter iterates.
struct SlotCounts {
  std::vector<int64_t> count;  // [n_items]
  std::vector<int32_t> first_seen;
  int64_t n_slots = 0;  // filled (non -1) slots
};

SlotCounts count_slots(const RankingRecords& records, const Env& env, int k) {
  const int64_t n_items = env.ctx.n_items;
  SlotCounts out;
  out.count.assign(static_cast<size_t>(std::max<int64_t>(n_items, 0)), 0);
  const int64_t n_users = records.n_users();
  for (int64_t r = 0; r < n_users; ++r) {
    const int32_t* items = records.topk_items.data() + r * records.max_k;
    for (int j = 0; j < k; ++j) {
      const int32_t item = items[j];
      if (item < 0) continue;
      if (item >= n_items) {
        throw std::invalid_argument(
            "metrics: recommended item id " + std::to_string(item) +
            " is not below MetricContext::n_items = " + std::to_string(n_items));
      }
      if (out.count[item]++ == 0) out.first_seen.push_back(item);
      ++out.n_slots;
    }
  }
  return out;
}

double item_coverage_global(const RankingRecords& records, const Env& env, int k) {
  const SlotCounts c = count_slots(records, env, k);
  return static_cast<double>(c.first_seen.size()) / static_cast<double>(env.ctx.n_items);
}

double gini_index_global(const RankingRecords& records, const Env& env, int k) {
  const SlotCounts c = count_slots(records, env, k);
  std::vector<int64_t> sorted;
  sorted.reserve(c.first_seen.size());
  for (int32_t item : c.first_seen) sorted.push_back(c.count[item]);
  std::sort(sorted.begin(), sorted.end());
  // Unrecommended items hold the lowest positions 1..n-m with count 0, so only the m
  // recommended ones (positions n-m+1..n) contribute. Integer sum, then one division as numpy.
  const int64_t n = env.ctx.n_items;
  const int64_t m = static_cast<int64_t>(sorted.size());
  int64_t weighted = 0;
  for (int64_t i = 0; i < m; ++i) weighted += (2 * (n - m + 1 + i) - n - 1) * sorted[i];
  return static_cast<double>(weighted) / static_cast<double>(c.n_slots) / static_cast<double>(n);
}

double shannon_entropy_global(const RankingRecords& records, const Env& env, int k) {
  const SlotCounts c = count_slots(records, env, k);
  double entropy = 0.0;
  for (int32_t item : c.first_seen) {
    const double p = static_cast<double>(c.count[item]) / static_cast<double>(c.n_slots);
    entropy += -p * std::log(p);
  }
  // RecBole divides by the number of distinct recommended items, not by log(n).
  return entropy / static_cast<double>(c.first_seen.size());
}

double gauc_rank(const RankingRecords& records) {
  const int64_t n_users = records.n_users();
  bool dropped_no_pos = false;
  bool dropped_no_neg = false;
  double weighted_auc = 0.0;
  double total_pos = 0.0;
  for (int64_t r = 0; r < n_users; ++r) {
    const double pos = records.pos_len[r];
    const double len = records.user_len[r];
    const double neg = len - pos;
    if (pos <= 0) {
      dropped_no_pos = true;
      continue;
    }
    if (neg <= 0) {
      dropped_no_neg = true;
      continue;
    }
    const double pairs = (len + 1) * pos - pos * (pos + 1) / 2 - records.pos_rank_sum[r];
    const double auc = pairs / (neg * pos);
    weighted_auc += auc * pos;
    total_pos += pos;
  }
  if (total_pos == 0) {
    log::warning(
        "GAUC: no user has both positive items and negative candidates, so GAUC is "
        "undefined (nan; null in result files)");
  } else {
    if (dropped_no_pos)
      log::warning("GAUC: some users have no positive items; they are left out of GAUC");
    if (dropped_no_neg)
      log::warning("GAUC: some users have no negative candidates; they are left out of GAUC");
  }
  return weighted_auc / total_pos;  // NaN when no user is left, as numpy's 0/0
}

// A ranking formula, named after its row of the registry (metric_registry.cpp).
struct Formula {
  const char* name;
  PerUserFn per_user = nullptr;
  GlobalFn global = nullptr;
  RankFn rank = nullptr;
  bool needs_tail = false;
};

const std::vector<Formula>& formulas() {
  static const std::vector<Formula> table = {
      {"Recall", recall_per_user},
      {"MRR", mrr_per_user},
      {"NDCG", ndcg_per_user},
      {"Hit", hit_per_user},
      {"Precision", precision_per_user},
      {"MAP", map_per_user},
      {"GAUC", nullptr, nullptr, gauc_rank},
      {"ItemCoverage", nullptr, item_coverage_global},
      {"AveragePopularity", average_popularity_per_user},
      {"GiniIndex", nullptr, gini_index_global},
      {"ShannonEntropy", nullptr, shannon_entropy_global},
      {"TailPercentage", tail_percentage_per_user, nullptr, nullptr, true},
  };
  return table;
}

// A ranking metric: its registry row and its formula.
struct MetricDef {
  MetricInfo info;
  PerUserFn per_user = nullptr;
  GlobalFn global = nullptr;
  RankFn rank = nullptr;
  bool needs_tail = false;
};

// The registry's ranking rows in its order, each with its formula. A row without a formula, or
// a formula without a row or of the wrong shape for its kind, is a programming error: it throws
// std::logic_error at the first use (and in the tests).
const std::vector<MetricDef>& metric_defs() {
  static const std::vector<MetricDef> defs = [] {
    std::vector<MetricDef> out;
    for (const MetricInfo& info : metric_registry()) {
      if (!info.is_ranking()) continue;
      const Formula* formula = nullptr;
      for (const Formula& f : formulas()) {
        if (std::string(f.name) == info.name) formula = &f;
      }
      const bool fits = formula != nullptr &&
                        (info.kind == MetricKind::kPerUserTopk  ? formula->per_user != nullptr
                         : info.kind == MetricKind::kGlobalTopk ? formula->global != nullptr
                                                                : formula->rank != nullptr);
      if (!fits) {
        throw std::logic_error(std::string("metrics: registered ranking metric ") + info.name +
                               " has no formula of its kind in metrics.cpp");
      }
      out.push_back({info, formula->per_user, formula->global, formula->rank, formula->needs_tail});
    }
    if (out.size() != formulas().size()) {
      throw std::logic_error(
          "metrics: a formula in metrics.cpp has no ranking row in the registry");
    }
    return out;
  }();
  return defs;
}

const MetricDef* find_def(const std::string& name) {
  const std::string lower = to_lower(name);
  for (const MetricDef& def : metric_defs()) {
    if (to_lower(def.info.name) == lower) return &def;
  }
  return nullptr;
}

std::string known_list() {
  std::string out;
  for (const MetricDef& def : metric_defs()) {
    if (!out.empty()) out += ", ";
    out += def.info.name;
  }
  return out;
}

// RecBole's tail set (TailPercentage): only items present in the training counter qualify.
std::vector<uint8_t> build_tail_set(const MetricContext& ctx) {
  const auto& count = ctx.item_train_count;
  std::vector<uint8_t> tail(count.size(), 0);
  double ratio = ctx.tail_ratio;
  if (!(ratio > 0)) ratio = 0.1;
  if (ratio > 1) {
    for (size_t i = 0; i < count.size(); ++i) tail[i] = count[i] > 0 && count[i] <= ratio;
    return tail;
  }
  std::vector<int32_t> present;
  for (size_t i = 0; i < count.size(); ++i) {
    if (count[i] > 0) present.push_back(static_cast<int32_t>(i));
  }
  // Ids ascending already, so a stable sort by count orders by (count, id).
  std::stable_sort(present.begin(), present.end(),
                   [&](int32_t a, int32_t b) { return count[a] < count[b]; });
  const auto cut =
      std::max<int64_t>(static_cast<int64_t>(static_cast<double>(present.size()) * ratio), 1);
  for (int64_t i = 0; i < std::min<int64_t>(cut, static_cast<int64_t>(present.size())); ++i) {
    tail[present[i]] = 1;
  }
  return tail;
}

}  // namespace

void RankingRecords::validate() const {
  const auto n = static_cast<size_t>(n_users());
  const auto cells = n * static_cast<size_t>(std::max(max_k, 0));
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("RankingRecords: " + what);
  };
  if (max_k < 0) fail("max_k is negative");
  if (topk_items.size() != cells) {
    fail("topk_items has " + std::to_string(topk_items.size()) + " entries, expected n_users * " +
         "max_k = " + std::to_string(cells));
  }
  if (hits.size() != cells) {
    fail("hits has " + std::to_string(hits.size()) +
         " entries, expected n_users * max_k = " + std::to_string(cells));
  }
  if (has_rank_stats() && (pos_rank_sum.size() != n || user_len.size() != n)) {
    fail("pos_rank_sum and user_len must both have n_users = " + std::to_string(n) + " entries");
  }
}

void RankingRecords::append(const RankingRecords& other) {
  if (other.n_users() == 0) return;
  if (n_users() == 0 && max_k == 0) max_k = other.max_k;
  if (other.max_k != max_k) {
    throw std::invalid_argument("RankingRecords::append: max_k " + std::to_string(other.max_k) +
                                " does not match " + std::to_string(max_k));
  }
  if (n_users() > 0 && has_rank_stats() != other.has_rank_stats()) {
    throw std::invalid_argument(
        "RankingRecords::append: one side has GAUC rank statistics and the other does not");
  }
  topk_items.insert(topk_items.end(), other.topk_items.begin(), other.topk_items.end());
  hits.insert(hits.end(), other.hits.begin(), other.hits.end());
  pos_len.insert(pos_len.end(), other.pos_len.begin(), other.pos_len.end());
  pos_rank_sum.insert(pos_rank_sum.end(), other.pos_rank_sum.begin(), other.pos_rank_sum.end());
  user_len.insert(user_len.end(), other.user_len.begin(), other.user_len.end());
}

bool needs_rank_stats(const std::vector<std::string>& metrics) {
  for (const std::string& name : metrics) {
    const MetricDef* def = find_def(name);
    if (def != nullptr && def->info.kind == MetricKind::kRank) return true;
  }
  return false;
}

double python_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  // glibc's printf rounds the exact binary value, ties to even, as CPython's round() does
  // (both are correctly rounded); strtod then returns the double nearest to that decimal.
  const int len = std::snprintf(nullptr, 0, "%.*f", ndigits, x);
  std::vector<char> buf(static_cast<size_t>(len) + 1);
  std::snprintf(buf.data(), buf.size(), "%.*f", ndigits, x);
  return std::strtod(buf.data(), nullptr);
}

std::vector<std::pair<std::string, double>> compute_metrics(const std::vector<std::string>& metrics,
                                                            const std::vector<int64_t>& topk,
                                                            const RankingRecords& records,
                                                            const MetricContext& ctx,
                                                            int decimal_place) {
  if (decimal_place < 0) {
    throw ConfigError("metric_decimal_place: expected int >= 0, got " +
                      std::to_string(decimal_place));
  }
  std::vector<const MetricDef*> defs;
  bool any_topk = false;
  for (const std::string& name : metrics) {
    const MetricDef* def = find_def(name);
    if (def == nullptr) {
      const MetricInfo* row = find_metric(name);
      if (row != nullptr) {  // a value metric
        throw ConfigError("metrics: " + std::string(row->name) +
                          " is a value metric, computed from labelled or sampled rows, not from "
                          "ranked lists; ranking metrics: " +
                          known_list());
      }
      throw ConfigError("metrics: unknown metric \"" + name + "\"; known metrics: " + known_list());
    }
    if (std::find(defs.begin(), defs.end(), def) != defs.end()) continue;
    defs.push_back(def);
    any_topk = any_topk || def->info.kind != MetricKind::kRank;
  }
  std::vector<int> ks;
  for (int64_t k : topk) {
    if (k < 1) throw ConfigError("topk: expected ints >= 1, got " + std::to_string(k));
    if (any_topk && k > records.max_k) {
      throw std::invalid_argument(
          "compute_metrics: topk " + std::to_string(k) +
          " exceeds the collected list length max_k = " + std::to_string(records.max_k));
    }
    if (std::find(ks.begin(), ks.end(), static_cast<int>(k)) == ks.end()) {
      ks.push_back(static_cast<int>(k));
    }
  }
  records.validate();

  Env env{ctx, records.max_k, {}, {}, {}};
  env.discount.resize(records.max_k);
  env.idcg.resize(records.max_k);
  double ideal = 0.0;
  for (int j = 0; j < records.max_k; ++j) {
    env.discount[j] = 1.0 / std::log2(static_cast<double>(j + 2));
    ideal += env.discount[j];
    env.idcg[j] = ideal;
  }
  for (const MetricDef* def : defs) {
    if (def->needs_tail) {
      env.is_tail = build_tail_set(ctx);
      break;
    }
  }

  std::vector<std::pair<std::string, double>> out;
  const int64_t n_users = records.n_users();
  std::vector<double> sums(records.max_k);
  std::vector<double> values(records.max_k);
  for (const MetricDef* def : defs) {
    const std::string key = to_lower(def->info.name);
    switch (def->info.kind) {
      case MetricKind::kPerUserTopk: {
        // Users are summed in record order, like numpy's mean over axis 0.
        std::fill(sums.begin(), sums.end(), 0.0);
        for (int64_t r = 0; r < n_users; ++r) {
          const UserRow row{records.topk_items.data() + r * records.max_k,
                            records.hits.data() + r * records.max_k, records.pos_len[r],
                            records.max_k};
          def->per_user(row, env, values.data());
          for (int j = 0; j < records.max_k; ++j) sums[j] += values[j];
        }
        for (int k : ks) {
          const double mean = sums[k - 1] / static_cast<double>(n_users);
          out.emplace_back(key + "@" + std::to_string(k), python_round(mean, decimal_place));
        }
        break;
      }
      case MetricKind::kGlobalTopk:
        for (int k : ks) {
          const double value = def->global(records, env, k);
          out.emplace_back(key + "@" + std::to_string(k), python_round(value, decimal_place));
        }
        break;
      case MetricKind::kRank:
        if (!records.has_rank_stats() && n_users > 0) {
          throw std::invalid_argument(
              "compute_metrics: GAUC needs RankingRecords::pos_rank_sum and user_len (collect "
              "them when needs_rank_stats() is true)");
        }
        out.emplace_back(key, python_round(def->rank(records), decimal_place));
        break;
      case MetricKind::kValue:  // never: metric_defs() holds the ranking rows only
        break;
    }
  }
  return out;
}

RankStats rank_stats(const float* scores, int64_t n_items, const int32_t* positive_items,
                     int64_t n_pos) {
  RankStats stats{0.0, 0};
  if (n_items <= 0) return stats;
  const float lowest = *std::min_element(scores, scores + n_items);
  int64_t above_lowest = 0;
  for (int64_t i = 0; i < n_items; ++i) above_lowest += scores[i] > lowest;
  stats.user_len = static_cast<int32_t>(above_lowest);
  if (n_pos <= 0) return stats;

  std::vector<int32_t> positives(positive_items, positive_items + n_pos);
  std::sort(positives.begin(), positives.end());
  positives.erase(std::unique(positives.begin(), positives.end()), positives.end());
  // Distinct positive scores, ascending; for each, count the items scoring above and equal.
  std::vector<float> levels;
  levels.reserve(positives.size());
  for (int32_t item : positives) {
    if (item < 0 || item >= n_items) {
      throw std::invalid_argument("rank_stats: positive item id " + std::to_string(item) +
                                  " outside [0, " + std::to_string(n_items) + ")");
    }
    levels.push_back(scores[item]);
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  // An item scoring x is above every level < x: a difference array over the level index.
  std::vector<int64_t> above_diff(levels.size() + 1, 0);
  std::vector<int64_t> equal(levels.size(), 0);
  for (int64_t i = 0; i < n_items; ++i) {
    const float x = scores[i];
    const auto idx = std::lower_bound(levels.begin(), levels.end(), x) - levels.begin();
    if (idx > 0) {
      ++above_diff[0];
      --above_diff[idx];
    }
    if (idx < static_cast<int64_t>(levels.size()) && levels[idx] == x) ++equal[idx];
  }
  std::vector<double> mid_rank(levels.size());
  int64_t above = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    above += above_diff[l];
    // Tied items occupy positions above+1 .. above+equal; their mean is the mid-rank.
    mid_rank[l] = static_cast<double>(above) + static_cast<double>(equal[l] + 1) / 2.0;
  }
  for (int32_t item : positives) {
    const auto l = std::lower_bound(levels.begin(), levels.end(), scores[item]) - levels.begin();
    stats.pos_rank_sum += mid_rank[l];
  }
  return stats;
}

}  // namespace recbole::evaluator

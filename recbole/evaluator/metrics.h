#pragma once
// Ranking metrics of RecBole's evaluator (recbole/evaluator/metrics.py), computed from per-user
// top-K records. Pure C++ (no libtorch): the evaluator turns score tensors into RankingRecords
// elsewhere, possibly on several processes, and hands the appended records to compute_metrics.
//
// Conventions used throughout:
//   * Item ids are the remapped integer ids; id 0 is the padding item and is never recommended
//     by a correct collector (its score is -inf), but it still counts in MetricContext::n_items,
//     as in RecBole (ItemCoverage and GiniIndex divide by it).
//   * Arrays of per-user rows are row-major: user r's slot j (0-based, rank j+1) is at r*max_k+j.
//   * Every per-user value is averaged with equal weight over the users of the records.
//
// Adding a metric: add its row to the registry (metric_registry.cpp) and its per-user, global or
// rank function to the formulas in metrics.cpp under the same name; the config, the messages and
// smaller_is_better() follow from the registry.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "recbole/config/metric_registry.h"

namespace recbole::evaluator {

// Per-user ranking outcomes collected during evaluation. One row per evaluated user; rows may come
// in any order and from several processes (append). K = max_k = max(topk).
struct RankingRecords {
  int max_k = 0;
  std::vector<int32_t> topk_items;   // [n_users * max_k] item ids, best first; -1 where the user
                                     // had fewer than K candidates (such slots are misses and
                                     // recommend nothing)
  std::vector<uint8_t> hits;         // [n_users * max_k] 1 if that item is a positive of the user
  std::vector<int32_t> pos_len;      // [n_users] number of distinct positives of the user
  std::vector<double> pos_rank_sum;  // [n_users] only when GAUC is asked (else empty): sum of the
                                     // positives' mid-ranks (1-based, descending score), see
                                     // rank_stats
  std::vector<int32_t> user_len;     // [n_users] only with GAUC: number of non-masked candidates

  int64_t n_users() const { return static_cast<int64_t>(pos_len.size()); }
  bool has_rank_stats() const { return !user_len.empty() || !pos_rank_sum.empty(); }

  // Concatenates the rows of `other` after ours. An empty record set with max_k 0 adopts
  // other.max_k. Throws std::invalid_argument when max_k differs or when one side carries rank
  // statistics and the other (non-empty) side does not.
  void append(const RankingRecords& other);

  // Checks that the array sizes agree with n_users() and max_k; throws std::invalid_argument.
  void validate() const;
};

// Dataset facts some metrics need.
struct MetricContext {
  int64_t n_items = 0;                    // number of items INCLUDING the padding id 0
  std::vector<int64_t> item_train_count;  // [n_items] interactions per item in the training
                                          // split; 0 = the item is absent from the training
                                          // split (RecBole's Counter has no zero entries)
  double tail_ratio = 0.1;                // TailPercentage: <= 0 means 0.1; > 1 is a count bound
};

// True when GAUC is among `metrics` (case-insensitive): the collector must then fill
// RankingRecords::pos_rank_sum and user_len.
bool needs_rank_stats(const std::vector<std::string>& metrics);

// Computes every metric at every k (GAUC once, without @k), ordered metrics-then-topk as RecBole
// does, with lowercase keys ("recall@10", "gauc"). Repeated metric names or k values give one key
// (first position). Each per-user metric is the plain mean over users; every value is rounded to
// `decimal_place` decimals like Python's round(). An empty record set gives NaN for averages.
// Throws recbole::ConfigError for an unknown metric (the message lists the ranking metrics), a
// value metric (those are compute_value_metrics'), a k < 1, or a negative decimal_place;
// std::invalid_argument when the records are inconsistent (sizes, a k above records.max_k, GAUC
// without rank statistics, an item id >= ctx.n_items).
std::vector<std::pair<std::string, double>> compute_metrics(const std::vector<std::string>& metrics,
                                                            const std::vector<int64_t>& topk,
                                                            const RankingRecords& records,
                                                            const MetricContext& ctx,
                                                            int decimal_place);

// Python's round(x, ndigits) for ndigits >= 0: the decimal nearest to the exact binary value of x,
// ties to even. NaN and infinities are returned unchanged.
double python_round(double x, int ndigits);

// GAUC statistics of one user's score row, as RecBole's collector computes them.
struct RankStats {
  double pos_rank_sum;  // sum over the distinct positives of their 1-based descending mid-rank
                        // (tied scores share the mean of the positions they occupy)
  int32_t user_len;     // number of scores strictly above the row minimum; with masked entries
                        // at -inf (the pad always is) this is the number of candidates
};
// scores: [n_items] float32, masked entries -inf, no NaN. positive_items: [n_pos] item ids in
// [0, n_items); duplicates count once. O(n_items log n_pos) time, O(n_pos) extra memory.
RankStats rank_stats(const float* scores, int64_t n_items, const int32_t* positive_items,
                     int64_t n_pos);

}  // namespace recbole::evaluator

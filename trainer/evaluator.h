#pragma once
// Full-ranking evaluation (RecBole §5): for each evaluated user (those with at least one
// interaction in the split, ascending id), the model scores every item, the padding item and the
// user's history are masked to −inf, and the top-K is taken. Users are processed in blocks
// sized so that the [B, n_items] float32 score block stays within eval_memory_budget_mb,
// whatever the number of users and items.
//
// Where the top-K is taken: on CUDA (and in the sampled modes) by tensor ops on the device; on
// the CPU by the kernels of cpu_topk.h on the ThreadPool (masking from the sparse history rows,
// a streaming partial top-K; ties by lower item id). For models that expose score factors
// (BPR) the CPU path never builds a score block at all: each worker scores cache-sized tiles of
// users × items with a GEMM and merges them into running top-K lists.
//
// Distributed: evaluated users are dealt round-robin over ranks; every rank collects per-user
// records, which are gathered so that each user counts exactly once and every rank computes the
// same metrics as a single process would (unlike RecBole, which weights ranks by batch count).
#include <string>
#include <utility>
#include <vector>

#include "models/model.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/evaluator/metrics.h"
#include "recbole/utils/dist.h"

namespace recbole::trainer {

using MetricValues = std::vector<std::pair<std::string, double>>;

// Which split is evaluated: validation masks the training items; test masks train and valid.
enum class Phase { kValid, kTest };

struct EvaluatorSettings {
  // "full" ranks every item; "uniN" / "popN" rank each user's positives against N negatives per
  // positive drawn uniformly / by training popularity from the items the user never interacted
  // with in train..this split (RecBole's sampled modes).
  std::string valid_mode = "full";
  std::string test_mode = "full";
  uint64_t seed = 2020;
  std::vector<std::string> metrics;
  std::vector<int64_t> topk;
  int decimal_place = 4;
  int64_t memory_budget_bytes = 256LL << 20;
  double tail_ratio = 0.1;
};

EvaluatorSettings evaluator_settings_from_config(const config::Config& config);

class Evaluator {
 public:
  // item_train_count: [n_items] interactions per item in the training split (for popularity
  // metrics).
  Evaluator(EvaluatorSettings settings, const DeviceManager& device, Dist& dist, int64_t n_items,
            std::vector<int64_t> item_train_count);

  // positives: the split's user → items; history: items to mask (the user's positives in this
  // split are never masked, as in RecBole). Returns metrics in RecBole's order.
  MetricValues evaluate(models::Model& model, const data::InteractionMatrix& positives,
                        const data::InteractionMatrix& history, Phase phase = Phase::kValid) const;

  // The per-user records of this rank only (tests and distributed checks use them).
  evaluator::RankingRecords collect(models::Model& model, const data::InteractionMatrix& positives,
                                    const data::InteractionMatrix& history,
                                    Phase phase = Phase::kValid) const;

 private:
  // CPU, full ranking: the model's score blocks, masked and ranked row by row on the pool.
  void collect_scores_cpu(models::Model& model, const std::vector<int32_t>& users,
                          const data::InteractionMatrix& positives,
                          const data::InteractionMatrix& history, int64_t kk,
                          evaluator::RankingRecords& rec) const;
  // CPU, full ranking, models with score factors: per worker, tiles of users × items scored by
  // a GEMM, masked and merged into running top-K lists while in cache.
  void collect_factors_cpu(models::Model& model, const torch::Tensor& user_factors,
                           const torch::Tensor& item_factors, const std::vector<int32_t>& users,
                           const data::InteractionMatrix& positives,
                           const data::InteractionMatrix& history, int64_t kk,
                           evaluator::RankingRecords& rec) const;
  // Users per score block: [B, n_items] float32 within eval_memory_budget_mb (at least 1).
  int64_t users_per_block() const;
  // [B, n_items] float32 scores on the device for a block of users, checked and writable.
  torch::Tensor scores_for(models::Model& model, const std::vector<int64_t>& block_users) const;

  EvaluatorSettings settings_;
  const DeviceManager& device_;
  Dist& dist_;
  int64_t n_items_;
  evaluator::MetricContext context_;
  bool rank_stats_;
};

// "recall@10 : 0.2466    mrr@10 : 0.4895 ..." with `decimal_place` decimals.
std::string format_metrics(const MetricValues& values, int decimal_place);

}  // namespace recbole::trainer

#pragma once
// The evaluator: one home for evaluation, over the evaluation sources a task pipeline builds.
//
// Ranking (modes full, uniN, popN; RankingSource): for each query row, the model scores every
// item; the padding item and the row's mask (its history, minus its own positives) go to −inf;
// in the sampled modes every item outside the row's positives and N sampled negatives per
// positive is masked too; then the top-K is taken. Rows are processed in blocks sized so that
// the [B, n_items] float32 score block stays within eval_memory_budget_mb.
//   Where the top-K is taken: on CUDA and in the sampled modes by tensor ops on the device; on
//   the CPU by the kernels of cpu_topk.h on the ThreadPool (masking from the sparse rows, a
//   streaming partial top-K; ties by lower item id). For models that expose score factors
//   (BPR) over user rows, the CPU path never builds a score block: each worker scores
//   cache-sized tiles of users × items with a GEMM and merges them into running top-K lists.
// Labelled (mode labeled; LabeledSource): the model scores each (query, item) row with
//   predict(); the (score, label) records give the value metrics (AUC, LogLoss, MAE, RMSE).
// Value metrics of a ranking source (modes uniN, popN, as RecBole): each positive of a row is a
//   record labelled 1 and each of its N sampled negatives (the candidates the sampled ranking
//   draws, a repeated draw counted again) a record labelled 0, scored from the row's score
//   block. Under full ranking they are a ConfigError (RecBole refuses them at configuration).
//
// Distributed: ranking rows and labelled batches are dealt round-robin over ranks; every rank
// gathers every rank's records, so each row counts exactly once and every rank computes the
// same metrics as a single process would (unlike RecBole, which weights ranks by batch count).
#include <string>
#include <utility>
#include <vector>

#include "models/model.h"
#include "recbole/config/eval_mode.h"
#include "recbole/evaluator/metric_values.h"
#include "recbole/evaluator/metrics.h"
#include "recbole/evaluator/value_metrics.h"
#include "recbole/runtime/dist.h"
#include "tasks/evaluation_source.h"

namespace recbole::evaluator {

// The evaluation sources are the task families' (tasks/evaluation_source.h).
using tasks::EvaluationSource;
using tasks::LabeledSource;
using tasks::RankingSource;

// MetricValues: recbole/evaluator/metric_values.h.

// Which split is evaluated (it selects the mode, and keeps the sampled candidates of the two
// splits apart).
enum class Phase { kValid, kTest };

struct EvaluatorSettings {
  config::EvalMode valid_mode;  // full by default
  config::EvalMode test_mode;
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
  // item_train_count: [n_items] interactions per item in the training split (popularity
  // metrics and the popN sampler).
  Evaluator(EvaluatorSettings settings, const DeviceManager& device, Dist& dist, int64_t n_items,
            std::vector<int64_t> item_train_count);

  // The metrics of `source` in RecBole's order. A ranking source needs a ranking mode for
  // `phase`, a labelled source the labeled mode (else ConfigError).
  MetricValues evaluate(models::Model& model, const EvaluationSource& source,
                        Phase phase = Phase::kValid) const;

  // The per-row records of this rank only (tests and distributed checks use them).
  RankingRecords collect(models::Model& model, const RankingSource& source,
                         Phase phase = Phase::kValid) const;
  ValueRecords collect_values(models::Model& model, const LabeledSource& source) const;
  // Records of a sampled mode (uniN, popN) for value metrics; users holds the row ids. Another
  // mode for `phase` is a ConfigError.
  ValueRecords collect_sampled_values(models::Model& model, const RankingSource& source,
                                      Phase phase = Phase::kValid) const;

 private:
  // CPU, full ranking: the model's score blocks, masked and ranked row by row on the pool.
  void collect_scores_cpu(models::Model& model, const RankingSource& source,
                          const std::vector<int32_t>& rows, int64_t kk, RankingRecords& rec) const;
  // CPU, full ranking, models with score factors over user rows: per worker, tiles of users ×
  // items scored by a GEMM, masked and merged into running top-K lists while in cache.
  void collect_factors_cpu(models::Model& model, const torch::Tensor& user_factors,
                           const torch::Tensor& item_factors, const RankingSource& source,
                           const std::vector<int32_t>& rows, int64_t kk, RankingRecords& rec) const;
  // CUDA, and the sampled modes: masking and top-K as tensor ops on the device.
  void collect_on_device(models::Model& model, const RankingSource& source,
                         const std::vector<int32_t>& rows, const config::EvalMode& mode,
                         Phase phase, int64_t kk, RankingRecords& rec) const;
  // The rows of `source` this rank evaluates (round-robin over ranks).
  std::vector<int32_t> rows_of_this_rank(const RankingSource& source) const;
  // Rows per score block: [B, n_items] float32 within eval_memory_budget_mb (at least 1).
  int64_t rows_per_block() const;
  // [B, n_items] float32 scores on the device for a block of rows, checked and writable.
  torch::Tensor scores_for(models::Model& model, const RankingSource& source,
                           const std::vector<int64_t>& block_rows) const;
  const config::EvalMode& mode(Phase phase) const {
    return phase == Phase::kValid ? settings_.valid_mode : settings_.test_mode;
  }

  EvaluatorSettings settings_;
  const DeviceManager& device_;
  Dist& dist_;
  int64_t n_items_;
  MetricContext context_;
  bool rank_stats_;
  bool value_metrics_ = false;  // settings_.metrics holds a value metric (AUC, LogLoss, ...)
};

// "recall@10 : 0.2466    mrr@10 : 0.4895 ..." with `decimal_place` decimals.
std::string format_metrics(const MetricValues& values, int decimal_place);

}  // namespace recbole::evaluator

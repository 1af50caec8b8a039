#pragma once
// Trainer: RecBole's training rules, for every model and task. It never names a model, a task
// or an input type: it pulls batches from the training source the pipeline built, calls the
// model's hooks, and evaluates the evaluation sources it is given.
//
// Gradient models: per epoch, on_epoch_start; then the model's fast epoch when it offers one,
// else for every batch of the source train_step (default: zero-grad, loss, backward, gradient
// averaging over ranks, optional clip_grad_norm, optimizer step); then on_epoch_end.
// Validation every eval_step epochs (before_evaluation first); early stopping on
// valid_metric with RecBole's rules: ties count as improvement, and training stops after
// stopping_step + 1 evaluations without one. The best model is written atomically to
// checkpoint_dir by rank 0 and reloaded for the test. Fitted-once models: fit, validate,
// checkpoint, test — no epochs and no optimizer. Distributed: parameters broadcast from rank 0
// at the start, gradients averaged over ranks by a bucketed all-reduce; every rank takes the
// same path.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model.h"
#include "recbole/evaluator/evaluator.h"
#include "recbole/pipeline/training_source.h"
#include "recbole/utils/error.h"

namespace recbole::trainer {

using evaluator::MetricValues;

struct FitResult {
  std::optional<double> best_valid_score;
  MetricValues best_valid_result;
  int64_t epochs_run = 0;
  int64_t best_epoch = -1;
  std::vector<double> train_seconds;  // per epoch
  std::vector<double> eval_seconds;   // per validation
  std::string checkpoint_path;        // empty when nothing was saved
};

// The evaluation sources of one run (they must outlive the trainer).
struct EvaluationSplits {
  const evaluator::EvaluationSource& valid;
  const evaluator::EvaluationSource& test;
};

class Trainer {
 public:
  // source: the model's training source; nullptr for fitted-once models.
  Trainer(const config::Config& config, models::Model& model, const DeviceManager& device,
          Dist& dist, pipeline::TrainingSource* source, const evaluator::Evaluator& evaluator,
          EvaluationSplits splits);
  ~Trainer();

  FitResult fit();
  // Test metrics; with load_best the checkpoint written by fit() is loaded first.
  MetricValues test(bool load_best = true);
  MetricValues validate();

  // Whether the model's own fast epoch runs instead of the batch loop (e.g. fused BPR).
  bool uses_fast_epoch() const { return fast_ != nullptr; }

  // Checkpoint I/O (atomic write: temporary file, then rename).
  void save_checkpoint(const std::string& path) const;
  void load_checkpoint(const std::string& path);

 private:
  class Step;
  double train_epoch(int64_t epoch);  // returns the summed batch loss (RecBole's report)
  // The best model of fit() is kept in memory (copies of its parameters and buffers) at each
  // improvement, and written to checkpoint_path_ when kBestWriteInterval has passed since the
  // last write, at the end of fit(), and when fit() throws. A write costs ~2.5 ms (an archive
  // and a rename): one per improvement was ~80 ms of a 1.8 s ml-100k run.
  void keep_best();
  void write_best();
  void sync_initial_parameters();

  const config::Config& config_;
  models::Model& model_;
  const DeviceManager& device_;
  Dist& dist_;
  pipeline::TrainingSource* source_;
  const evaluator::Evaluator& evaluator_;
  EvaluationSplits splits_;
  std::unique_ptr<Step> step_;               // the batch loop's optimizers
  std::unique_ptr<models::FastEpoch> fast_;  // set when the model's fast epoch applies
  std::string checkpoint_path_;
  std::vector<torch::Tensor> best_state_;  // see keep_best()
  bool best_unwritten_ = false;
  std::chrono::steady_clock::time_point last_best_write_{};
};

// The error for a NaN training loss (both training paths raise it).
Error nan_loss_error(const std::string& model, int64_t epoch);

}  // namespace recbole::trainer

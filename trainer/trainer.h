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
//
// Stopping and resuming (trainer/resume_checkpoint.h, trainer/resume_state.h): after every batch
// the trainer looks for a stop request (recbole/utils/stop_signal.h; with several ranks they agree
// through one small collective, so every rank stops after the same batch). On one it writes a
// resume checkpoint and the best model, and fit() returns with stop_signal set. A resume checkpoint
// is also written after every epoch, in the background. resume() before fit() continues such a run:
// with the same seed it ends bit for bit where the uninterrupted run would have.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"
#include "tasks/training_source.h"
#include "trainer/best_model.h"
#include "trainer/checkpoint_writer.h"
#include "trainer/evaluator.h"
#include "trainer/resume_checkpoint.h"
#include "trainer/resume_state.h"

namespace recbole::trainer {

using evaluator::MetricValues;

// One epoch of a run, for the result's history.
struct EpochRecord {
  int64_t epoch = 0;
  double train_loss = 0;
  double train_s = 0;
  std::optional<double> valid_score;  // when the epoch was validated
  MetricValues valid_result;          // every validation metric (empty when not validated)
  double eval_s = 0;
};

// [{"epoch","train_loss","train_s","valid_score","valid_result":{metric: value},"eval_s"}, ...]
// (valid_score null and valid_result {} for an epoch not validated): the result file's history,
// and the resume checkpoint's.
nlohmann::json history_to_json(const std::vector<EpochRecord>& history);
std::vector<EpochRecord> history_from_json(const nlohmann::json& j);

// What to tell a user whose run early stopping ended while the training loss never moved more
// than 2 % from its first epoch's: with validation scores that stayed flat too, the model had
// not started learning, and the "best" model kept ranks about as at random (NCL on ml-100k: BPR
// at ln 2 a batch for ~17 epochs, so stopping_step 10 can end it there; docs/models.md). A flat
// total alone does not prove it: SGL's InfoNCE sum hides its BPR term for ~19 epochs while its
// validation climbs. nullopt for any other history, and for a first loss of 0 or not finite.
std::optional<std::string> flat_loss_warning(const std::vector<EpochRecord>& history,
                                             int64_t stopping_step);

struct FitResult {
  std::optional<double> best_valid_score;
  MetricValues best_valid_result;
  int64_t epochs_run = 0;
  int64_t best_epoch = -1;
  std::vector<double> train_seconds;  // per epoch
  std::vector<double> eval_seconds;   // per validation
  std::string checkpoint_path;        // empty when nothing was saved
  std::vector<EpochRecord> history;   // every epoch trained, a resumed run's earlier ones too
  int stop_signal = 0;                // the signal that stopped the run; 0: it ran to its end
  std::string resume_path;            // the resume checkpoint to continue from (when stopped)
};

// The evaluation sources of one run (they must outlive the trainer).
struct EvaluationSplits {
  const tasks::EvaluationSource& valid;
  const tasks::EvaluationSource& test;
};

class Trainer {
 public:
  // source: the model's training source; nullptr for fitted-once models.
  Trainer(const config::Config& config, models::Model& model, const DeviceManager& device,
          Dist& dist, tasks::TrainingSource* source, const evaluator::Evaluator& evaluator,
          EvaluationSplits splits);
  ~Trainer();

  FitResult fit();
  // Continues the run of a resume checkpoint (call before fit()): parameters, optimizer and
  // generator states, the best model so far, early stopping, history and position; the run's
  // files keep their names. Throws Error for a file that cannot be read or does not fit.
  void resume(const std::string& path);
  // Test metrics; with load_best the checkpoint written by fit() is loaded first.
  MetricValues test(bool load_best = true);
  MetricValues validate();

  // Whether the model's own fast epoch runs instead of the batch loop (e.g. fused BPR).
  bool uses_fast_epoch() const { return fast_ != nullptr; }

  // Checkpoint I/O (atomic write: temporary file, then rename).
  void save_checkpoint(const std::string& path) const;
  void load_checkpoint(const std::string& path);

  // Entries written into every best-model checkpoint beside the model's tensors (run() adds the
  // serving section, tasks/serving_section.h: vocabularies, history, config), so
  // that the file stands alone. Called on the training thread when a checkpoint is snapshotted;
  // it must write only tensors that nothing changes afterwards (the writer serialises them
  // later, on its own thread). Model::load ignores them.
  using CheckpointExtras = trainer::CheckpointExtras;
  void set_checkpoint_extras(CheckpointExtras extras) { extras_ = std::move(extras); }

 private:
  class Step;
  FitResult fit_once();
  // With train_neg_sample_args.dynamic, gives the source the model's candidate scorer; a
  // ConfigError naming the model when its source cannot draw that way.
  void use_dynamic_negatives();
  // Trains the rest of epoch point_.epoch; the agreed stop signal when a stop request ended it
  // part-way, else 0.
  int train_epoch(int64_t epoch);
  // The signal of a stop request, agreed by every rank (0: go on). A collective when distributed.
  int agreed_stop();
  FitResult stop_run(int signal);
  // The model, optimizers, fast epoch, generators and best model, for trainer/resume_state.h.
  ResumeParts resume_parts();
  // Writes the resume checkpoint of point_ (background; wait: also waits for the disk).
  std::string write_resume(bool wait);
  void sync_initial_parameters();
  // before_evaluation, then the evaluation of `split`; the large CPU buffers the evaluation
  // kept are freed after it.
  MetricValues evaluate(const tasks::EvaluationSource& split, evaluator::Phase phase);

  // fast_path: the fast paths on or off (recbole/runtime/fast_path.h) while this trainer lives;
  // first, so that the optimizers and the model's own epoch are chosen under it.
  FastPathGuard fast_paths_;
  const config::Config& config_;
  models::Model& model_;
  const DeviceManager& device_;
  Dist& dist_;
  tasks::TrainingSource* source_;
  const evaluator::Evaluator& evaluator_;
  EvaluationSplits splits_;
  std::unique_ptr<Step> step_;               // the batch loop's optimizers
  std::unique_ptr<models::FastEpoch> fast_;  // set when the model's fast epoch applies
  std::string run_;                          // checkpoint_dir/<Model>-<time>-<pid>
  std::string config_snapshot_;              // the effective config, for resume checkpoints
  CheckpointExtras extras_;                  // see set_checkpoint_extras()
  std::unique_ptr<CheckpointWriter> writer_;
  std::unique_ptr<BestModel> best_;  // its checkpoint: run_ + ".pth"
  // Where the run stands, and what a resume checkpoint carries besides tensors.
  ResumePoint point_;
  double epoch_loss_ = 0;     // loss summed over the batches done of point_.epoch
  double epoch_seconds_ = 0;  // training time spent in point_.epoch
  std::optional<double> best_score_;
  int64_t cur_step_ = 0;  // validations without improvement
  FitResult result_;
  Clock::time_point last_resume_write_{};
  int64_t resume_writes_ = 0;
  double resume_snapshot_s_ = 0;  // on the training thread
};

// The error for a NaN training loss (both training paths raise it).
Error nan_loss_error(const std::string& model, int64_t epoch);

}  // namespace recbole::trainer

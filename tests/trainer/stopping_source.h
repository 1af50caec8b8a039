#pragma once
// A training source for the resume tests: the real source's batches, and a stop request (as
// SIGTERM would make) when a chosen batch is handed out.
#include <signal.h>

#include <memory>

#include "recbole/utils/stop_signal.h"
#include "tasks/task_pipeline.h"

namespace recbole::testing {

// Passes the batches of the real source through and asks the run to stop (as SIGTERM would)
// when the `stop_at`-th batch (counted from 1 over the whole run) is handed out: the trainer
// finishes that batch, then stops.
class StoppingSource : public tasks::TrainingSource {
 public:
  StoppingSource(std::unique_ptr<TrainingSource> inner, int64_t stop_at)
      : inner_(std::move(inner)), stop_at_(stop_at) {}
  void start_epoch(int64_t epoch) override { inner_->start_epoch(epoch); }
  bool next(data::Batch& batch) override {
    if (!inner_->next(batch)) return false;
    if (++handed_ == stop_at_) request_stop(SIGTERM);
    return true;
  }
  int64_t batches_per_epoch() const override { return inner_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { inner_->skip_batches(n); }
  data::TrainBatcher* sampled_pair_batcher() override { return inner_->sampled_pair_batcher(); }
  bool set_candidate_scorer(tasks::CandidateScorer scorer) override {
    return inner_->set_candidate_scorer(std::move(scorer));
  }
  void use_batches(models::PassBatches b) override { inner_->use_batches(b); }

 private:
  std::unique_ptr<TrainingSource> inner_;
  int64_t stop_at_;
  int64_t handed_ = 0;
};

}  // namespace recbole::testing

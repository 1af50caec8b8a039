#pragma once
// PairSource: RecBole's training loader for pairwise models — the epoch's shuffled training
// interactions in batches, each positive with sample_num sampled negatives (rows repeated as a
// block, one negative per row). Owns the NegativeSampler and the TrainBatcher; BPR's fused
// epoch drives the batcher directly (sampled_pair_batcher()). With dynamic sampling each
// negative is the one the model scores highest among candidate_num drawn candidates.
#include <memory>

#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "tasks/dynamic_negatives.h"
#include "tasks/general/interaction_sources.h"

namespace recbole::tasks {

class PairSource : public TrainingSource {
 public:
  PairSource(const InteractionData& data, const SourceSettings& settings);

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  // users, items (positives), neg_items (when sampling).
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { batcher_->skip(n); }

  // Dynamic sampling scores candidates with the model, which BPR's fused epoch cannot do.
  data::TrainBatcher* sampled_pair_batcher() override {
    return sampler_ && !dynamic_ ? batcher_.get() : nullptr;
  }
  bool set_candidate_scorer(CandidateScorer scorer) override;

 private:
  std::unique_ptr<data::NegativeSampler> sampler_;
  std::unique_ptr<data::TrainBatcher> batcher_;
  std::unique_ptr<DynamicNegatives> dynamic_;  // null with static sampling
  data::PairBatch pairs_;
};

}  // namespace recbole::tasks

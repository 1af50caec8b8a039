#pragma once
// PairSource: RecBole's training loader for pairwise models — the epoch's shuffled training
// interactions in batches, each positive with sample_num sampled negatives (rows repeated as a
// block, one negative per row). Owns the NegativeSampler and the TrainBatcher; BPR's fused
// epoch drives the batcher directly (sampled_pair_batcher()).
#include <memory>

#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "recbole/pipeline/training_source.h"

namespace recbole::pipeline {

class PairSource : public TrainingSource {
 public:
  PairSource(const InteractionData& data, const SourceSettings& settings);

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  // users, items (positives), neg_items (when sampling).
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { batcher_->skip(n); }

  data::TrainBatcher* sampled_pair_batcher() override {
    return sampler_ ? batcher_.get() : nullptr;
  }

 private:
  std::unique_ptr<data::NegativeSampler> sampler_;
  std::unique_ptr<data::TrainBatcher> batcher_;
  data::PairBatch pairs_;
};

}  // namespace recbole::pipeline

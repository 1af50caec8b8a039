#pragma once
// PointwiseSource: RecBole's training loader for pointwise models with negative sampling —
// each batch holds batch_size // (1 + sample_num) observed interactions labelled 1 and, for
// each, sample_num sampled negatives labelled 0 (RecBole's layout: the positives, then
// sample_num copies of them with one negative each). With dynamic sampling each negative is the
// one the model scores highest among candidate_num drawn candidates.
#include "tasks/general/pair_source.h"

namespace recbole::tasks {

class PointwiseSource : public TrainingSource {
 public:
  // settings.negatives must be enabled.
  PointwiseSource(const InteractionData& data, const SourceSettings& settings);

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  // users, items, labels (float32).
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { batcher_->skip(n); }
  bool set_candidate_scorer(CandidateScorer scorer) override;

 private:
  int sample_num_;
  std::unique_ptr<data::NegativeSampler> sampler_;
  std::unique_ptr<data::TrainBatcher> batcher_;
  std::unique_ptr<DynamicNegatives> dynamic_;  // null with static sampling
  data::PairBatch pairs_;
  std::vector<int64_t> users_, items_;
};

}  // namespace recbole::tasks

#pragma once
// DynamicNegatives: RecBole's dynamic negative sampling (train_neg_sample_args.dynamic) for the
// sources built on a TrainBatcher. Each negative slot of a batch gets candidate_num candidates
// — the batcher's own draw and candidate_num - 1 more from the sampler — scored together by the
// model being trained; the slot keeps its best-scored one (the first drawn on ties). The extra
// draws come from a stream keyed by (seed, epoch, batch, rank), so a resumed epoch draws what it
// drew.
#include <cstdint>

#include "recbole/pipeline/training_source.h"

namespace recbole::data {
class NegativeSampler;
struct PairBatch;
}  // namespace recbole::data

namespace recbole::pipeline {

class DynamicNegatives {
 public:
  // settings.negatives.dynamic() must hold.
  explicit DynamicNegatives(const SourceSettings& settings);

  void set_scorer(CandidateScorer scorer) { scorer_ = std::move(scorer); }
  // The position of the next batch: start_epoch(e) then skip(n) as the batcher does.
  void start_epoch(int64_t epoch) { epoch_ = epoch, batch_ = 0; }
  void skip(int64_t n) { batch_ += n; }

  // Replaces pairs.neg_items (one per row) by the best-scored candidates, and moves to the next
  // batch. An Error when no scorer was set or it scored the wrong number of candidates.
  void pick(data::PairBatch& pairs, const data::NegativeSampler& sampler);

 private:
  uint64_t seed_;
  int rank_;
  int64_t candidate_num_;
  CandidateScorer scorer_;
  int64_t epoch_ = 0, batch_ = 0;
};

}  // namespace recbole::pipeline

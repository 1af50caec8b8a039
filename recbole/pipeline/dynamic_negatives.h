#pragma once
// DynamicNegatives: RecBole's dynamic negative sampling (train_neg_sample_args.dynamic) for the
// sources built on a TrainBatcher. Each negative slot of a batch gets candidate_num candidates
// — the batcher's own draw and candidate_num - 1 more from the sampler — scored together by the
// model being trained; the slot keeps its best-scored one (the first drawn on ties). The extra
// draws come from a stream derived from the batcher's batch key (seed, epoch, batch, rank), so a
// resumed epoch draws what it drew.
#include <cstdint>
#include <utility>

#include "recbole/pipeline/training_source.h"

namespace recbole::data {
class NegativeSampler;
struct PairBatch;
}  // namespace recbole::data

namespace recbole::pipeline {

class DynamicNegatives {
 public:
  // candidate_num >= 1.
  explicit DynamicNegatives(int64_t candidate_num) : candidate_num_(candidate_num) {}

  void set_scorer(CandidateScorer scorer) { scorer_ = std::move(scorer); }

  // Replaces pairs.neg_items (one per row) by the best-scored candidates; batch_key: the
  // batcher's key of that batch (TrainBatcher::batch_key). An Error when no scorer was set or
  // it scored the wrong number of candidates.
  void pick(data::PairBatch& pairs, const data::NegativeSampler& sampler, uint64_t batch_key);

 private:
  int64_t candidate_num_;
  CandidateScorer scorer_;
};

}  // namespace recbole::pipeline

#pragma once
// DynamicNegatives: RecBole's dynamic negative sampling (train_neg_sample_args.dynamic). Each
// negative slot of a batch gets candidate_num candidates — the source's own draw and
// candidate_num - 1 more from the sampler — scored together by the model being trained; the
// slot keeps its best-scored one (the first drawn on ties). Every source that samples negatives
// uses it: the batcher-based ones (pairwise, pointwise, next-item) through pick(), which draws
// the extra candidates from a stream derived from the batcher's batch key (seed, epoch, batch,
// rank), so a resumed epoch draws what it drew; the context source draws its own candidates and
// asks best().
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "tasks/training_source.h"

namespace recbole::data {
class NegativeSampler;
struct PairBatch;
}  // namespace recbole::data

namespace recbole::tasks {

class DynamicNegatives {
 public:
  // The model input that scores items[r] for the slot owner owners[r] (a user, or a sequential
  // sample): what the source's own batches carry for that owner, with items = items.
  using CandidateInput = std::function<data::Batch(const std::vector<int64_t>& owners,
                                                   const std::vector<int64_t>& items)>;

  // candidate_num >= 1.
  explicit DynamicNegatives(int64_t candidate_num) : candidate_num_(candidate_num) {}

  int64_t candidate_num() const { return candidate_num_; }
  void set_scorer(CandidateScorer scorer) { scorer_ = std::move(scorer); }

  // Replaces pairs.neg_items (one per row, owned by pairs.users[row]) by the best-scored
  // candidates; the sampler draws for pairs.users. batch_key: the batcher's key of that batch
  // (TrainBatcher::batch_key). input: null for users and items alone.
  void pick(data::PairBatch& pairs, const data::NegativeSampler& sampler, uint64_t batch_key,
            const CandidateInput& input = {}) const;

  // candidates: [candidate_num · n], candidate k of slot j at k · n + j (RecBole's layout);
  // input: the model input scoring them in that order. Returns each slot's best-scored
  // candidate ([n]). An Error when no scorer was set or it scored the wrong number of rows.
  std::vector<int64_t> best(const std::vector<int64_t>& candidates, const data::Batch& input) const;

 private:
  int64_t candidate_num_;
  CandidateScorer scorer_;
};

}  // namespace recbole::tasks

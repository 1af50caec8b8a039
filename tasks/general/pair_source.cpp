#include "tasks/general/pair_source.h"

#include <torch/torch.h>

namespace recbole::tasks {

PairSource::PairSource(const InteractionData& data, const SourceSettings& s) {
  if (s.negatives.enabled())
    sampler_ = std::make_unique<data::NegativeSampler>(data.train, s.negatives.distribution,
                                                       s.negatives.alpha, data.item_count);
  if (s.negatives.dynamic())
    dynamic_ = std::make_unique<DynamicNegatives>(s.negatives.candidate_num);
  batcher_ = std::make_unique<data::TrainBatcher>(data.users, data.items, sampler_.get(),
                                                  s.negatives.sample_num, s.batch_size, s.shuffle,
                                                  s.seed, s.rank, s.world_size);
}

bool PairSource::set_candidate_scorer(CandidateScorer scorer) {
  if (!dynamic_) return false;
  dynamic_->set_scorer(std::move(scorer));
  return true;
}

bool PairSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  batch = data::Batch();
  batch.users = data::id_tensor(pairs_.users);
  batch.items = data::id_tensor(pairs_.pos_items);
  if (!pairs_.neg_items.empty()) {
    if (dynamic_) dynamic_->pick(pairs_, *sampler_, batcher_->batch_key());
    batch.neg_items = data::id_tensor(pairs_.neg_items);
  }
  return true;
}

}  // namespace recbole::tasks

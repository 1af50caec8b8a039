#include "tasks/general/pointwise_source.h"

#include <algorithm>

#include <torch/torch.h>

#include "recbole/utils/error.h"

namespace recbole::tasks {

PointwiseSource::PointwiseSource(const InteractionData& data, const SourceSettings& s)
    : sample_num_(std::max(s.negatives.sample_num, 1)) {
  if (!s.negatives.enabled()) throw Error("PointwiseSource needs negative sampling");
  sampler_ = std::make_unique<data::NegativeSampler>(data.train, s.negatives.distribution,
                                                     s.negatives.alpha, data.item_count);
  // The batcher takes batch_size / sample_num positives and tiles them sample_num times (one
  // negative per row, RecBole's repeat); asking it for
  // (batch_size / (1 + sample_num)) · sample_num rows gives RecBole's pointwise batch.
  const int64_t positives = std::max<int64_t>(s.batch_size / (1 + sample_num_), 1);
  batcher_ = std::make_unique<data::TrainBatcher>(data.users, data.items, sampler_.get(),
                                                  sample_num_, positives * sample_num_, s.shuffle,
                                                  s.seed, s.rank, s.world_size);
  if (s.negatives.dynamic())
    dynamic_ = std::make_unique<DynamicNegatives>(s.negatives.candidate_num);
}

bool PointwiseSource::set_candidate_scorer(CandidateScorer scorer) {
  if (!dynamic_) return false;
  dynamic_->set_scorer(std::move(scorer));
  return true;
}

bool PointwiseSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  if (dynamic_) dynamic_->pick(pairs_, *sampler_, batcher_->batch_key());
  const int64_t n = pairs_.size();
  // This rank's positives are the batch's first copy: [positives; copy with negatives 1; ...].
  const int64_t positives = n / sample_num_;
  users_.assign(pairs_.users.begin(), pairs_.users.begin() + positives);
  items_.assign(pairs_.pos_items.begin(), pairs_.pos_items.begin() + positives);
  users_.insert(users_.end(), pairs_.users.begin(), pairs_.users.end());
  items_.insert(items_.end(), pairs_.neg_items.begin(), pairs_.neg_items.end());
  batch = data::Batch();
  batch.users = data::id_tensor(users_);
  batch.items = data::id_tensor(items_);
  batch.labels = torch::zeros({positives + n}, torch::kFloat32);
  batch.labels.narrow(0, 0, positives).fill_(1.0f);
  return true;
}

}  // namespace recbole::tasks

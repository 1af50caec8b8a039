#include "recbole/pipeline/pair_source.h"

#include <torch/torch.h>

#include "recbole/utils/error.h"

namespace recbole::pipeline {

PairSource::PairSource(const InteractionData& data, const SourceSettings& s) : settings_(s) {
  if (s.negatives.enabled())
    sampler_ = std::make_unique<data::NegativeSampler>(data.train, s.negatives.distribution,
                                                       s.negatives.alpha, data.item_count);
  batcher_ = std::make_unique<data::TrainBatcher>(data.users, data.items, sampler_.get(),
                                                  s.negatives.sample_num, s.batch_size, s.shuffle,
                                                  s.seed, s.rank, s.world_size);
}

void PairSource::start_epoch(int64_t epoch) {
  batcher_->start_epoch(epoch);
  epoch_ = epoch;
  batch_ = 0;
}

void PairSource::skip_batches(int64_t n) {
  batcher_->skip(n);
  batch_ += n;
}

bool PairSource::set_candidate_scorer(CandidateScorer scorer) {
  if (!settings_.negatives.dynamic()) return false;
  scorer_ = std::move(scorer);
  return true;
}

bool PairSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  batch = data::Batch();
  batch.users = data::id_tensor(pairs_.users);
  batch.items = data::id_tensor(pairs_.pos_items);
  if (!pairs_.neg_items.empty()) {
    if (settings_.negatives.dynamic()) pick_dynamic_negatives();
    batch.neg_items = data::id_tensor(pairs_.neg_items);
  }
  ++batch_;
  return true;
}

void PairSource::pick_dynamic_negatives() {
  if (!scorer_)
    throw Error("dynamic negative sampling: the training source has no candidate scorer");
  const int64_t n = pairs_.size(), c = settings_.negatives.candidate_num;
  // Candidate k of slot j at k · n + j, as RecBole lays them out (candidate_num blocks).
  std::vector<int64_t> users(static_cast<size_t>(n * c)), items(static_cast<size_t>(n * c));
  // One stream per (seed, epoch, batch, rank): a resumed epoch draws what it drew.
  data::Rng rng(settings_.seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(epoch_) << 40) ^
                (static_cast<uint64_t>(batch_) << 8) ^ static_cast<uint64_t>(settings_.rank) ^
                0xd1b54a32d192ed03ULL);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t u = pairs_.users[j];
      users[k * n + j] = u;
      items[k * n + j] =
          k == 0 ? pairs_.neg_items[j] : sampler_->sample(static_cast<int32_t>(u), rng);
    }
  data::Batch candidates;
  candidates.users = data::id_tensor(users);
  candidates.items = data::id_tensor(items);
  const torch::Tensor scores = scorer_(candidates);
  if (scores.dim() != 1 || scores.size(0) != n * c)
    throw Error("dynamic negative sampling: the model scored " + c10::str(scores.sizes()) +
                " candidates, expected [" + std::to_string(n * c) + "]");
  const torch::Tensor s = scores.to(torch::kFloat32).contiguous();
  const float* sp = s.data_ptr<float>();
  for (int64_t j = 0; j < n; ++j) {
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (sp[k * n + j] > sp[best * n + j]) best = k;
    pairs_.neg_items[j] = items[best * n + j];
  }
}

}  // namespace recbole::pipeline

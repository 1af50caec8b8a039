#include "recbole/data/train_batcher.h"

#include <algorithm>
#include <numeric>

namespace recbole::data {

TrainBatcher::TrainBatcher(const std::vector<int32_t>& users, const std::vector<int32_t>& items,
                           const NegativeSampler* sampler, int sample_num,
                           int64_t train_batch_size, bool shuffle, uint64_t seed, int rank,
                           int world_size)
    : users_(users),
      items_(items),
      sampler_(sampler),
      sample_num_(sampler ? std::max(sample_num, 1) : 1),
      step_(std::max<int64_t>(train_batch_size / (sampler ? std::max(sample_num, 1) : 1), 1)),
      shuffle_(shuffle),
      seed_(seed),
      rank_(rank),
      world_(std::max(world_size, 1)),
      // Negatives differ per rank (each rank samples for its own rows).
      neg_rng_(seed * 0x9e3779b97f4a7c15ULL + 0x5851f42d4c957f2dULL * (rank + 1)) {
  order_.resize(users_.size());
  std::iota(order_.begin(), order_.end(), 0);
}

void TrainBatcher::start_epoch(int64_t epoch) {
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {
    Rng rng(seed_ ^ (0xd1b54a32d192ed03ULL * static_cast<uint64_t>(epoch + 1)));
    for (int64_t i = static_cast<int64_t>(order_.size()) - 1; i > 0; --i)
      std::swap(order_[i], order_[rng.below(i + 1)]);
  }
  cursor_ = 0;
}

int64_t TrainBatcher::batches_per_epoch() const {
  return (static_cast<int64_t>(order_.size()) + step_ - 1) / step_;
}

bool TrainBatcher::next(PairBatch& out) {
  const int64_t n = static_cast<int64_t>(order_.size());
  if (cursor_ >= n) return false;
  const int64_t end = std::min(cursor_ + step_, n);
  out.users.clear();
  out.pos_items.clear();
  out.neg_items.clear();
  for (int s = 0; s < sample_num_; ++s) {
    for (int64_t p = cursor_ + rank_; p < end; p += world_) {
      const int64_t row = order_[p];
      out.users.push_back(users_[row]);
      out.pos_items.push_back(items_[row]);
      if (sampler_) out.neg_items.push_back(sampler_->sample(users_[row], neg_rng_));
    }
  }
  cursor_ = end;
  return true;
}

}  // namespace recbole::data

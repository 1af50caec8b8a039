#include "recbole/data/train_batcher.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

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
      world_(std::max(world_size, 1)) {
  if (users_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw DataError("training split has " + std::to_string(users_.size()) +
                    " interactions; at most 2^31 - 1 are supported");
  order_.resize(users_.size());
  std::iota(order_.begin(), order_.end(), 0);
}

void TrainBatcher::start_epoch(int64_t epoch) {
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {
    // Fisher-Yates. The swap targets of the next kAhead steps are drawn ahead (the same draws in
    // the same order) so their cache lines can be prefetched: at 80M rows each swap is otherwise
    // a cache miss waited for in turn.
    Rng rng(seed_ ^ (0xd1b54a32d192ed03ULL * static_cast<uint64_t>(epoch + 1)));
    constexpr int64_t kAhead = 16;
    int64_t ring[kAhead];
    const int64_t n = static_cast<int64_t>(order_.size());
    int64_t drawn = n - 1;  // next i whose target is still to be drawn
    auto draw_until = [&](int64_t lowest) {
      for (; drawn > 0 && drawn >= lowest; --drawn) {
        const int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(drawn + 1)));
        ring[drawn % kAhead] = j;
        __builtin_prefetch(&order_[j], 1);
      }
    };
    for (int64_t i = n - 1; i > 0; --i) {
      draw_until(i - kAhead + 1);
      std::swap(order_[i], order_[ring[i % kAhead]]);
    }
  }
  cursor_ = 0;
  epoch_ = epoch;
  batch_ = 0;
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
  constexpr int64_t kAhead = 16;  // prefetch distance of the row gather
  for (int s = 0; s < sample_num_; ++s) {
    for (int64_t p = cursor_ + rank_; p < end; p += world_) {
      if (p + kAhead * world_ < end) {
        __builtin_prefetch(&users_[order_[p + kAhead * world_]]);
        __builtin_prefetch(&items_[order_[p + kAhead * world_]]);
      }
      const int64_t row = order_[p];
      out.users.push_back(users_[row]);
      out.pos_items.push_back(items_[row]);
    }
  }
  out.neg_items.clear();
  if (sampler_) {
    const int64_t b = out.size();
    out.neg_items.resize(static_cast<size_t>(b));
    const int64_t chunks = (b + kNegChunk - 1) / kNegChunk;
    const uint64_t key = seed_ * 0x9e3779b97f4a7c15ULL ^
                         (static_cast<uint64_t>(epoch_) + 1) * 0xbf58476d1ce4e5b9ULL ^
                         (static_cast<uint64_t>(batch_) + 1) * 0x94d049bb133111ebULL ^
                         (static_cast<uint64_t>(rank_) + 1) * 0x5851f42d4c957f2dULL;
    parallel_for(chunks, [&](int64_t c, int) {
      Rng rng(key + static_cast<uint64_t>(c) * 0xd6e8feb86659fd93ULL);
      const int64_t hi = std::min(b, (c + 1) * kNegChunk);
      sampler_->prefetch(out.users.data() + c * kNegChunk, hi - c * kNegChunk);
      for (int64_t r = c * kNegChunk; r < hi; ++r)
        out.neg_items[r] = sampler_->sample(static_cast<int32_t>(out.users[r]), rng);
    });
  }
  cursor_ = end;
  ++batch_;
  return true;
}

}  // namespace recbole::data

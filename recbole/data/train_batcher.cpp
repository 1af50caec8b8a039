#include "recbole/data/train_batcher.h"

#include <algorithm>
#include <limits>
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
  pairs_.reset(users_.size());
  cursor_ = static_cast<int64_t>(users_.size());  // no epoch started: next() returns false
}

void TrainBatcher::start_epoch(int64_t epoch) {
  const int64_t n = static_cast<int64_t>(users_.size());
  UserItem* pairs = pairs_.data();
  for (int64_t r = 0; r < n; ++r) pairs[r] = {users_[r], items_[r]};
  if (shuffle_) {
    // Fisher-Yates over the pairs: the permutation is that of row indices 0..n-1 under the same
    // draws. The swap targets of the next kAhead steps are drawn ahead (the same draws in the
    // same order) so that their cache lines can be prefetched: at 80M rows each swap is
    // otherwise a cache miss waited for in turn.
    Rng rng(seed_ ^ (0xd1b54a32d192ed03ULL * static_cast<uint64_t>(epoch + 1)));
    constexpr int64_t kAhead = 16;
    int64_t ring[kAhead];
    int64_t drawn = n - 1;  // next i whose target is still to be drawn
    auto draw_until = [&](int64_t lowest) {
      for (; drawn > 0 && drawn >= lowest; --drawn) {
        const int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(drawn + 1)));
        ring[drawn % kAhead] = j;
        __builtin_prefetch(&pairs[j], 1);
      }
    };
    for (int64_t i = n - 1; i > 0; --i) {
      draw_until(i - kAhead + 1);
      std::swap(pairs[i], pairs[ring[i % kAhead]]);
    }
  }
  cursor_ = 0;
  epoch_ = epoch;
  batch_ = 0;
}

int64_t TrainBatcher::batches_per_epoch() const {
  return (static_cast<int64_t>(pairs_.size()) + step_ - 1) / step_;
}

bool TrainBatcher::next(PairBatch& out) {
  if (!next_positives(out)) return false;
  parallel_for(negative_chunks(out), [&](int64_t c, int) { sample_negatives(out, c); });
  return true;
}

bool TrainBatcher::next_positives(PairBatch& out) {
  const int64_t n = static_cast<int64_t>(pairs_.size());
  if (cursor_ >= n) return false;
  const int64_t end = std::min(cursor_ + step_, n);
  out.users.clear();
  out.pos_items.clear();
  const UserItem* pairs = pairs_.data();
  for (int s = 0; s < sample_num_; ++s) {
    for (int64_t p = cursor_ + rank_; p < end; p += world_) {
      out.users.push_back(pairs[p].user);
      out.pos_items.push_back(pairs[p].item);
    }
  }
  out.neg_items.clear();
  if (sampler_) out.neg_items.resize(out.users.size());
  batch_key_ = seed_ * 0x9e3779b97f4a7c15ULL ^
               (static_cast<uint64_t>(epoch_) + 1) * 0xbf58476d1ce4e5b9ULL ^
               (static_cast<uint64_t>(batch_) + 1) * 0x94d049bb133111ebULL ^
               (static_cast<uint64_t>(rank_) + 1) * 0x5851f42d4c957f2dULL;
  cursor_ = end;
  ++batch_;
  return true;
}

int64_t TrainBatcher::negative_chunks(const PairBatch& batch) const {
  return sampler_ ? (batch.size() + kNegChunk - 1) / kNegChunk : 0;
}

void TrainBatcher::sample_negatives(PairBatch& batch, int64_t chunk) const {
  if (!sampler_) return;
  Rng rng(batch_key_ + static_cast<uint64_t>(chunk) * 0xd6e8feb86659fd93ULL);
  const int64_t lo = chunk * kNegChunk, hi = std::min(batch.size(), lo + kNegChunk);
  // A software pipeline over the rows: the row bounds of the user kBounds rows ahead and the
  // filter of the user kFilter rows ahead are fetched while this row draws (at 100M
  // interactions both are cache misses).
  constexpr int64_t kBounds = 24, kFilter = 12;
  const int64_t* users = batch.users.data();
  for (int64_t r = lo; r < std::min(hi, lo + kBounds); ++r) sampler_->prefetch_bounds(users[r]);
  for (int64_t r = lo; r < std::min(hi, lo + kFilter); ++r) sampler_->prefetch_filter(users[r]);
  for (int64_t r = lo; r < hi; ++r) {
    if (r + kBounds < hi) sampler_->prefetch_bounds(users[r + kBounds]);
    if (r + kFilter < hi) sampler_->prefetch_filter(users[r + kFilter]);
    batch.neg_items[r] = sampler_->sample(static_cast<int32_t>(users[r]), rng);
  }
}

}  // namespace recbole::data

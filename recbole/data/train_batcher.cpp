#include "recbole/data/train_batcher.h"

#include <algorithm>
#include <limits>
#include <string>

#include "recbole/data/bucket_offsets.h"
#include "recbole/utils/error.h"
#include "recbole/utils/splitmix.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::data {

TrainBatcher::TrainBatcher(const std::vector<int32_t>& users, const std::vector<int32_t>& items,
                           const NegativeSampler* sampler, int sample_num, int64_t train_batch_size,
                           bool shuffle, uint64_t seed, int rank, int world_size)
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

namespace {

// Rows per task of the epoch's copy and of the shuffle's counting and scatter passes: about a
// sixteenth of the rows, between 64k and 1M, so that 1M interactions split into a dozen tasks
// instead of one (the passes cost ~10 ms on one core there). Neither the part size nor the
// thread count changes the permutation: a row's bucket depends on (seed, epoch, row) only, and
// a bucket keeps its rows in row order whatever the parts (bucket_offsets lays parts out in
// order).
int64_t shuffle_part_rows(int64_t n) {
  return std::clamp<int64_t>(n / 16, int64_t{1} << 16, int64_t{1} << 20);
}

// Buckets of the shuffle: about 16k rows each (128 KiB of pairs, shuffled inside a core's
// cache), at most 4096; one for small sets.
int64_t shuffle_buckets(int64_t n) { return std::clamp<int64_t>(n >> 14, 1, 4096); }

}  // namespace

void TrainBatcher::start_epoch(int64_t epoch) {
  const int64_t n = static_cast<int64_t>(users_.size());
  UserItem* pairs = pairs_.data();
  const int64_t part = shuffle_part_rows(n);
  const int64_t chunks = (n + part - 1) / part;
  if (!shuffle_) {
    parallel_for_blocks(n, part, [&](int64_t, int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) pairs[r] = {users_[r], items_[r]};
    });
  } else {
    // A uniformly random permutation in parallel (scatter, then shuffle each bucket): every row
    // goes to a bucket drawn uniformly from a counter-based stream keyed by (seed, epoch, row),
    // rows keep their order inside a bucket, and each bucket is then shuffled by Fisher-Yates
    // from its own stream. Given the bucket sizes, a bucket holds a uniformly random subset of
    // the rows in uniformly random order, so the concatenation is a uniform permutation. A
    // global Fisher-Yates is one cache miss per row on one core (3 s at 80M rows); here every
    // pass is sequential or inside a cache-sized bucket, and all run on the ThreadPool.
    const uint64_t key =
        splitmix64_finalize(seed_ ^ (0xd1b54a32d192ed03ULL * static_cast<uint64_t>(epoch + 1)));
    const int64_t buckets = shuffle_buckets(n);
    auto bucket_of = [&](int64_t r) {
      return static_cast<int64_t>(
          (static_cast<unsigned __int128>(splitmix64_finalize(key + static_cast<uint64_t>(r))) *
           static_cast<uint64_t>(buckets)) >>
          64);
    };
    // offsets[c * buckets + b]: where chunk c's first row of bucket b goes.
    std::vector<int64_t> offsets(static_cast<size_t>(chunks * buckets), 0);
    parallel_for_blocks(n, part, [&](int64_t c, int64_t first, int64_t last) {
      int64_t* count = offsets.data() + c * buckets;
      for (int64_t r = first; r < last; ++r) ++count[bucket_of(r)];
    });
    const std::vector<int64_t> bucket_begin = bucket_offsets(offsets, chunks, buckets);
    parallel_for_blocks(n, part, [&](int64_t c, int64_t first, int64_t last) {
      int64_t* next = offsets.data() + c * buckets;
      for (int64_t r = first; r < last; ++r) pairs[next[bucket_of(r)]++] = {users_[r], items_[r]};
    });
    parallel_for(buckets, [&](int64_t b, int) {
      Rng rng(key ^ splitmix64_finalize(static_cast<uint64_t>(b) + 0x9e3779b97f4a7c15ULL));
      UserItem* part = pairs + bucket_begin[static_cast<size_t>(b)];
      const int64_t size =
          bucket_begin[static_cast<size_t>(b) + 1] - bucket_begin[static_cast<size_t>(b)];
      for (int64_t i = size - 1; i > 0; --i)
        std::swap(part[i], part[rng.below(static_cast<uint64_t>(i + 1))]);
    });
  }
  cursor_ = 0;
  epoch_ = epoch;
  batch_ = 0;
}

int64_t TrainBatcher::batches_per_epoch() const {
  return (static_cast<int64_t>(pairs_.size()) + step_ - 1) / step_;
}

void TrainBatcher::skip(int64_t batches) {
  const int64_t n = static_cast<int64_t>(pairs_.size());
  for (int64_t k = 0; k < batches && cursor_ < n; ++k) {
    cursor_ = std::min(cursor_ + step_, n);
    ++batch_;
  }
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
  // This rank's pairs of [cursor_, end), repeated sample_num_ times; written through pointers
  // into vectors resized once (a push_back per element cost ~10 µs a batch at 2048 pairs, while
  // the pool's workers waited).
  const int64_t first = cursor_ + rank_;
  const int64_t per_copy = first < end ? (end - first + world_ - 1) / world_ : 0;
  const size_t total = static_cast<size_t>(per_copy * sample_num_);
  out.users.resize(total);
  out.pos_items.resize(total);
  int64_t* users = out.users.data();
  int64_t* items = out.pos_items.data();
  const UserItem* pairs = pairs_.data();
  for (int s = 0; s < sample_num_; ++s, users += per_copy, items += per_copy) {
    for (int64_t k = 0; k < per_copy; ++k) {
      const UserItem& pair = pairs[first + k * world_];
      users[k] = pair.user;
      items[k] = pair.item;
    }
  }
  // Every entry is drawn by sample_negatives before use: no need to clear the previous batch's.
  out.neg_items.resize(sampler_ ? total : 0);
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
  // filter (or bitmap row) of the user kFilter rows ahead are fetched while this row draws (at
  // 100M interactions both are cache misses).
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

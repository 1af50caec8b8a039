#pragma once
// TrainBatcher: the training data loader for pairwise models (RecBole's TrainDataLoader with
// negative sampling). Each epoch shuffles the training interactions into a uniformly random
// order drawn from streams seeded by (seed, epoch) — in parallel, by scattering the rows into
// random buckets and shuffling each bucket, the same order for any number of threads; a batch
// holds `step = max(train_batch_size / sample_num, 1)` positive rows, each
// repeated sample_num times as a block with one sampled negative per row (RecBole's layout).
//
// Negatives are drawn in chunks of kNegChunk rows, each chunk from its own stream keyed by
// (seed, epoch, batch, chunk, rank), on the ThreadPool: the same negatives whatever the number
// of threads, and the sampling (a rejection test per draw) no longer runs on one core at 100M
// interactions.
//
// Distributed: every rank computes the same epoch order and takes the rows of each batch whose
// position p satisfies p % world_size == rank, so the ranks together see every batch exactly
// once. Rank and world size are given explicitly; this never asks a process group.
#include <cstdint>
#include <vector>

#include "recbole/data/negative_sampler.h"
#include "recbole/utils/huge_pages.h"

namespace recbole::data {

struct PairBatch {
  std::vector<int64_t> users;      // [B]
  std::vector<int64_t> pos_items;  // [B]
  std::vector<int64_t> neg_items;  // [B]; empty when there is no sampler
  int64_t size() const { return static_cast<int64_t>(users.size()); }
};

class TrainBatcher {
 public:
  // users, items: [n] the training interactions (kept by reference: they must outlive this).
  // sampler may be null (no negative sampling).
  TrainBatcher(const std::vector<int32_t>& users, const std::vector<int32_t>& items,
               const NegativeSampler* sampler, int sample_num, int64_t train_batch_size,
               bool shuffle, uint64_t seed, int rank = 0, int world_size = 1);

  void start_epoch(int64_t epoch);
  // Fills `out` with this rank's part of the next batch; false when the epoch is over.
  bool next(PairBatch& out);

  // next() in two steps, for a caller that samples inside its own parallel loop: the users and
  // positive items of the next batch (neg_items sized, not yet drawn), then the negatives of
  // chunk c (rows [c * kNegChunk, (c + 1) * kNegChunk)) of that batch. Chunks are independent:
  // any thread may draw any of them, in any order, with the same result.
  bool next_positives(PairBatch& out);
  int64_t negative_chunks(const PairBatch& batch) const;
  void sample_negatives(PairBatch& batch, int64_t chunk) const;
  int64_t batches_per_epoch() const;
  // Moves past the next `batches` batches of the epoch without building them (a resumed run
  // continues after the batches it had done): the batches after are those next() would have
  // returned, negatives included, since they are keyed by (seed, epoch, batch, rank).
  void skip(int64_t batches);
  int64_t step() const { return step_; }
  // The key of the batch last returned, from (seed, epoch, batch, rank): its negative streams
  // derive from it, and so may a caller's own draws for that batch.
  uint64_t batch_key() const { return batch_key_; }

  static constexpr int64_t kNegChunk = 512;

 private:
  const std::vector<int32_t>& users_;
  const std::vector<int32_t>& items_;
  const NegativeSampler* sampler_;
  int sample_num_;
  int64_t step_;
  bool shuffle_;
  uint64_t seed_;
  int rank_, world_;
  // This epoch's training pairs in their shuffled order, on huge pages: the shuffle moves the
  // pairs themselves, so a batch is a sequential read (at 80M rows a gather through a
  // permutation was two cache and TLB misses per row).
  struct UserItem {
    int32_t user;
    int32_t item;
  };
  HugeArray<UserItem> pairs_;
  int64_t cursor_ = 0;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;       // index of the next batch in this epoch
  uint64_t batch_key_ = 0;  // seeds the negative streams of the batch last returned
};

}  // namespace recbole::data

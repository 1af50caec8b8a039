#pragma once
// UserRowsSource: batches of users with their training rows, for models that read a user's
// whole history (the autoencoders, ENMF). As RecBole's UserDataLoader: every user id
// 0 .. n_users − 1 once per epoch (the pad user 0 included), always shuffled, train_batch_size
// users per batch, no negative sampling. Each batch's rows are densified from the sparse
// training matrix: [B, n_items] float32 per batch, never the whole matrix.
#include <memory>
#include <vector>

#include "recbole/data/train_batcher.h"
#include "tasks/general/interaction_sources.h"

namespace recbole::tasks {

class UserRowsSource : public TrainingSource {
 public:
  UserRowsSource(const InteractionData& data, const SourceSettings& settings);

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  // users, history.
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { batcher_->skip(n); }

 private:
  const data::InteractionMatrix& train_;
  std::vector<int32_t> user_ids_, unused_items_;  // 0 .. n_users − 1; zeros
  std::unique_ptr<data::TrainBatcher> batcher_;
  data::PairBatch pairs_;
};

}  // namespace recbole::tasks

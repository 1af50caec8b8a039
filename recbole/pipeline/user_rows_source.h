#pragma once
// UserRowsSource: batches of users with their training rows, for models that read a user's
// whole history (the autoencoders). It walks the epoch's shuffled training interactions as
// RecBole's loader does (a user appears once per interaction), and densifies the rows of each
// batch's users from the sparse training matrix: [B, n_items] float32 per batch, never the
// whole matrix.
#include <memory>

#include "recbole/data/train_batcher.h"
#include "recbole/pipeline/training_source.h"

namespace recbole::pipeline {

class UserRowsSource : public TrainingSource {
 public:
  UserRowsSource(const InteractionData& data, const SourceSettings& settings);

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  // users, items (the interaction's item), history.
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }

 private:
  const data::InteractionMatrix& train_;
  std::unique_ptr<data::TrainBatcher> batcher_;
  data::PairBatch pairs_;
};

}  // namespace recbole::pipeline

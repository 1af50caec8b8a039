#include "tasks/general/user_rows_source.h"

#include <numeric>

#include <torch/torch.h>

#include "recbole/data/dense_rows.h"

namespace recbole::tasks {

UserRowsSource::UserRowsSource(const InteractionData& data, const SourceSettings& s)
    : train_(data.train),
      user_ids_(static_cast<size_t>(data.train.n_users())),
      unused_items_(user_ids_.size(), 0) {
  std::iota(user_ids_.begin(), user_ids_.end(), 0);
  // Always shuffled, whatever `shuffle` says (RecBole forces it for this loader).
  batcher_ =
      std::make_unique<data::TrainBatcher>(user_ids_, unused_items_, nullptr, 1, s.batch_size,
                                           /*shuffle=*/true, s.seed, s.rank, s.world_size);
}

bool UserRowsSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  batch = data::Batch();
  batch.users = data::id_tensor(pairs_.users);
  batch.history = data::dense_rows(train_, pairs_.users);
  return true;
}

}  // namespace recbole::tasks

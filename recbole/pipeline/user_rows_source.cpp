#include "recbole/pipeline/user_rows_source.h"

#include <torch/torch.h>

#include "recbole/data/dense_rows.h"
#include "recbole/pipeline/pair_source.h"

namespace recbole::pipeline {

UserRowsSource::UserRowsSource(const InteractionData& data, const SourceSettings& s)
    : train_(data.train),
      batcher_(std::make_unique<data::TrainBatcher>(data.users, data.items, nullptr, 1,
                                                    s.batch_size, s.shuffle, s.seed, s.rank,
                                                    s.world_size)) {}

bool UserRowsSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  batch = data::Batch();
  batch.users = data::id_tensor(pairs_.users);
  batch.items = data::id_tensor(pairs_.pos_items);
  batch.history = data::dense_rows(train_, pairs_.users);
  return true;
}

}  // namespace recbole::pipeline

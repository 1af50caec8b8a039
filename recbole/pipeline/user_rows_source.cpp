#include "recbole/pipeline/user_rows_source.h"

#include <torch/torch.h>

#include "recbole/pipeline/pair_source.h"

namespace recbole::pipeline {

torch::Tensor dense_rows(const data::InteractionMatrix& x, const std::vector<int64_t>& users) {
  const int64_t b = static_cast<int64_t>(users.size());
  torch::Tensor out = torch::zeros({b, x.n_items()}, torch::kFloat32);
  float* p = out.data_ptr<float>();
  for (int64_t r = 0; r < b; ++r) {
    const int32_t u = static_cast<int32_t>(users[r]);
    for (const int32_t* it = x.row_begin(u); it != x.row_end(u); ++it)
      p[r * x.n_items() + *it] = 1.0f;
  }
  return out;
}

UserRowsSource::UserRowsSource(const InteractionData& data, const SourceSettings& s)
    : train_(data.train),
      batcher_(std::make_unique<data::TrainBatcher>(data.users, data.items, nullptr, 1,
                                                    s.batch_size, s.shuffle, s.seed, s.rank,
                                                    s.world_size)) {}

bool UserRowsSource::next(data::Batch& batch) {
  if (!batcher_->next(pairs_)) return false;
  batch = data::Batch();
  batch.users = long_tensor(pairs_.users);
  batch.items = long_tensor(pairs_.pos_items);
  batch.history = dense_rows(train_, pairs_.users);
  return true;
}

}  // namespace recbole::pipeline

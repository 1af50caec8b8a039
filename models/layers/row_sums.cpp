#include "models/layers/row_sums.h"

#include <vector>

#include "recbole/data/batch.h"

namespace recbole::models::layers {

torch::Tensor row_sums(const data::InteractionMatrix& m, const torch::Tensor& rows,
                       const torch::Tensor& table, const DeviceManager& device) {
  const torch::Tensor r_host = DeviceManager::to_host(rows).contiguous();
  const int64_t n = r_host.size(0);
  const int64_t* r = r_host.data_ptr<int64_t>();
  std::vector<int64_t> ids, offsets;
  offsets.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    offsets.push_back(static_cast<int64_t>(ids.size()));
    const auto row = static_cast<int32_t>(r[k]);
    ids.insert(ids.end(), m.row_begin(row), m.row_end(row));
  }
  return std::get<0>(torch::embedding_bag(table, device.place(data::id_tensor(ids)),
                                          device.place(data::id_tensor(offsets)),
                                          /*scale_grad_by_freq=*/false, /*mode=sum*/ 0));
}

std::pair<torch::Tensor, torch::Tensor> distinct_ids(const torch::Tensor& ids,
                                                     const DeviceManager& device) {
  auto [unique, inverse] =
      torch::_unique(DeviceManager::to_host(ids), /*sorted=*/true, /*return_inverse=*/true);
  return {unique, device.place(inverse)};
}

}  // namespace recbole::models::layers

#include "recbole/data/dense_rows.h"

namespace recbole::data {

torch::Tensor dense_rows(const InteractionMatrix& x, const std::vector<int64_t>& users) {
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

}  // namespace recbole::data

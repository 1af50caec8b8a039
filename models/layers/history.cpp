#include "models/layers/history.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace recbole::models::layers {

PaddedHistory padded_history(const data::InteractionMatrix& m, int64_t max_len, uint64_t seed) {
  const int64_t rows = m.n_users();
  int64_t longest = 0;
  for (int32_t r = 0; r < rows; ++r) longest = std::max(longest, m.row_size(r));
  const int64_t width = max_len > 0 ? std::min(max_len, longest) : longest;
  PaddedHistory h{torch::zeros({rows, std::max<int64_t>(width, 1)}, torch::kInt64),
                  torch::zeros({rows}, torch::kInt64)};
  int64_t* ids = h.ids.data_ptr<int64_t>();
  int64_t* len = h.lengths.data_ptr<int64_t>();
  const int64_t stride = h.ids.size(1);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> row;
  for (int32_t r = 0; r < rows; ++r) {
    row.assign(m.row_begin(r), m.row_end(r));
    if (static_cast<int64_t>(row.size()) > width) {
      std::shuffle(row.begin(), row.end(), rng);
      row.resize(static_cast<size_t>(width));
      std::sort(row.begin(), row.end());
    }
    len[r] = static_cast<int64_t>(row.size());
    for (size_t k = 0; k < row.size(); ++k) ids[r * stride + static_cast<int64_t>(k)] = row[k];
  }
  return h;
}

data::InteractionMatrix transpose(const data::InteractionMatrix& m) {
  std::vector<int32_t> items, users;
  items.reserve(static_cast<size_t>(m.nnz()));
  users.reserve(static_cast<size_t>(m.nnz()));
  for (int32_t u = 0; u < m.n_users(); ++u)
    for (const int32_t* it = m.row_begin(u); it != m.row_end(u); ++it)
      items.push_back(*it), users.push_back(u);
  return data::InteractionMatrix(m.n_items(), m.n_users(), items, users);
}

torch::Tensor history_length_scale(const data::InteractionMatrix& m, int64_t rows, double alpha) {
  torch::Tensor scale = torch::empty({rows}, torch::kFloat32);
  float* p = scale.data_ptr<float>();
  for (int64_t u = 0; u < rows; ++u)
    p[u] = static_cast<float>(std::pow(
        static_cast<double>(std::max<int64_t>(m.row_size(static_cast<int32_t>(u)), 1)), -alpha));
  return scale;
}

}  // namespace recbole::models::layers

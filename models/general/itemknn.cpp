#include "models/general/itemknn.h"

#include <algorithm>
#include <cmath>

#include "models/general/fitted_support.h"
#include "recbole/config/config.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

ItemKNN::ItemKNN(const ModelContext& ctx) : Model("ItemKNN", ctx) {
  user_mode_ = ctx.config.get_string("knn_method") == "user";
  k_ = ctx.config.get_int("k");
  shrink_ = ctx.config.get_double("shrink");
  const int64_t n = user_mode_ ? ctx.n_users : ctx.n_items;
  w_indptr_ = register_buffer("w_indptr", torch::zeros({n + 1}, ctx.device.long_options()));
  w_indices_ = register_buffer("w_indices", torch::zeros({0}, ctx.device.long_options()));
  w_values_ = register_buffer("w_values", torch::zeros({0}, ctx.device.float_options()));
}

void ItemKNN::fit() {
  // Entities are the vectors compared: items (columns of X) or users (rows). `of` maps an entity
  // to its coordinates, `back` maps a coordinate to the entities holding it.
  const BinaryCsr xt = transpose(train_);
  const BinaryCsr x = as_csr(train_);
  const BinaryCsr& of = user_mode_ ? x : xt;
  const BinaryCsr& back = user_mode_ ? xt : x;
  const int64_t n = of.n_rows;
  const int64_t k = std::min<int64_t>(k_, n);

  // Norms and similarities in float32, as RecBole computes them.
  std::vector<float> norm(n);
  for (int64_t a = 0; a < n; ++a) norm[a] = std::sqrt(static_cast<float>(of.row_size(a)));
  const float shrink = static_cast<float>(shrink_);

  // neighbours[b] = kept (a, sim(a, b)) for target b.
  std::vector<std::vector<std::pair<int32_t, float>>> neighbours(n);
  const int threads = ThreadPool::instance().threads();
  // Per-worker scratch: exact co-occurrence counts with b, and the entities that got one.
  std::vector<std::vector<int32_t>> dots(threads, std::vector<int32_t>(n, 0));
  std::vector<std::vector<int32_t>> touches(threads);
  parallel_for(n, [&](int64_t b, int worker) {
    std::vector<int32_t>& dot = dots[worker];
    std::vector<int32_t>& touched = touches[worker];
    touched.clear();
    for (int64_t p = of.indptr[b]; p < of.indptr[b + 1]; ++p) {
      const int32_t c = of.indices[p];
      for (int64_t q = back.indptr[c]; q < back.indptr[c + 1]; ++q) {
        const int32_t a = back.indices[q];
        if (dot[a]++ == 0) touched.push_back(a);
      }
    }
    // Only entities sharing a coordinate with b have a non-zero similarity; zeros are dropped
    // anyway, so the top-k is taken among them.
    std::vector<std::pair<float, int32_t>> cand;
    cand.reserve(touched.size());
    for (int32_t a : touched) {
      if (a == b) continue;  // self-similarity is 0
      const float denom = norm[b] * norm[a] + shrink + 1e-6f;
      const float sim = static_cast<float>(dot[a]) * (1.0f / denom);
      if (sim != 0.0f) cand.emplace_back(sim, a);
    }
    for (int32_t a : touched) dot[a] = 0;
    auto better = [](const std::pair<float, int32_t>& l, const std::pair<float, int32_t>& r) {
      return l.first > r.first || (l.first == r.first && l.second < r.second);
    };
    if (static_cast<int64_t>(cand.size()) > k) {
      std::nth_element(cand.begin(), cand.begin() + k, cand.end(), better);
      cand.resize(k);
    }
    auto& out = neighbours[b];
    out.reserve(cand.size());
    for (const auto& [sim, a] : cand) out.emplace_back(a, sim);
  });

  // Item mode: W[a, b] by row a, so scoring adds the rows of the user's items. User mode:
  // W[b, a] by row b (the target user), so scoring mixes the neighbours' rows of X.
  const CsrWeights w = user_mode_ ? csr_from_rows(neighbours) : csr_from_columns(n, neighbours);
  assign_buffer(w_indptr_, device_manager().place(w.indptr));
  assign_buffer(w_indices_, device_manager().place(w.indices));
  assign_buffer(w_values_, device_manager().place(w.values));
}

torch::Tensor ItemKNN::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  const std::vector<int64_t> u = to_vector(users);
  torch::Tensor scores =
      user_mode_ ? csr_times_history(train_, u, w_indptr_, w_indices_, w_values_)
                 : history_times_csr(train_, u, w_indptr_, w_indices_, w_values_, n_items());
  return device_manager().place(scores);
}

torch::Tensor ItemKNN::dense_weights() const {
  return csr_to_dense(w_indptr_, w_indices_, w_values_, w_indptr_.size(0) - 1);
}

RECBOLE_REGISTER_MODEL(ItemKNN) {
  register_model({"ItemKNN",
                  "general",
                  InputType::kFitOnce,
                  "Item (or user) k-nearest neighbours with shrunk cosine similarity",
                  {config::Key("k", config::KeyType::kInt)
                       .min(1)
                       .help("Neighbours kept per item (per user with knn_method user)"),
                   config::Key("shrink", config::KeyType::kFloat)
                       .min(0)
                       .help("Added to the denominator of the cosine similarity"),
                   config::Key("knn_method", config::KeyType::kString)
                       .choices({"item", "user"})
                       .help("Neighbourhood over items or over users")},
                  [](const ModelContext& ctx) { return std::make_shared<ItemKNN>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/spectralcf.h"

#include <string>

#include <torch/torch.h>

#include "models/layers/gathered_bpr_loss.h"
#include "models/layers/init.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

layers::SparseMatrix random_walk_operator(const data::InteractionMatrix& train) {
  const layers::SparseMatrix a = layers::bipartite_adjacency(train);
  std::vector<int64_t> r, c;
  std::vector<float> v;
  for (int64_t row = 0; row < a.rows; ++row) {
    double deg = 1e-7;
    for (int64_t k = a.indptr[row]; k < a.indptr[row + 1]; ++k)
      deg += a.values[static_cast<size_t>(k)];
    for (int64_t k = a.indptr[row]; k < a.indptr[row + 1]; ++k) {
      r.push_back(row);
      c.push_back(a.indices[static_cast<size_t>(k)]);
      v.push_back(static_cast<float>(-a.values[static_cast<size_t>(k)] / deg));
    }
    r.push_back(row), c.push_back(row), v.push_back(2.0f);  // every node, isolated ones too
  }
  return layers::SparseMatrix::from_triplets(a.rows, a.cols, r, c, v);
}

SpectralCF::SpectralCF(const ModelContext& ctx)
    : CachedFactorModel("SpectralCF", ctx),
      operator_(random_walk_operator(ctx.train), /*symmetric=*/false, ctx.device),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierUniform);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierUniform);
  const int64_t n_layers = ctx.config.get_int("n_layers");
  for (int64_t k = 0; k < n_layers; ++k)
    filters_.push_back(register_parameter("filter_" + std::to_string(k),
                                          ctx.device.place(torch::normal(0.01, 0.02, {d, d}))));
}

torch::Tensor SpectralCF::propagate_nodes() const {
  torch::Tensor e = torch::cat({user_embedding_, item_embedding_});
  std::vector<torch::Tensor> all{e};
  for (const torch::Tensor& theta : filters_) {
    e = torch::sigmoid(torch::matmul(layers::spmm(operator_, e), theta));
    all.push_back(e);
  }
  return torch::cat(all, 1);
}

std::pair<torch::Tensor, torch::Tensor> SpectralCF::propagate() const {
  const torch::Tensor nodes = propagate_nodes();
  return {nodes.slice(0, 0, n_users()), nodes.slice(0, n_users())};
}

torch::Tensor SpectralCF::calculate_loss(const data::Batch& batch) {
  drop_factors();
  // Items are nodes n_users + item of the propagated table.
  return layers::gathered_bpr_loss(propagate_nodes(), batch.users, batch.items + n_users(),
                                   batch.neg_items + n_users(), reg_weight_);
}

std::pair<torch::Tensor, torch::Tensor> SpectralCF::evaluation_factors() { return propagate(); }

RECBOLE_REGISTER_MODEL(SpectralCF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"SpectralCF",
       "general",
       InputType::kPairwise,
       "Spectral collaborative filtering: sigmoid filters over 2I - D^-1 A, layers concatenated",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("n_layers", KeyType::kInt).min(1).help("Spectral convolution layers"),
        keys::reg_weight().decl("Weight of the final embedding norm")},
       [](const ModelContext& ctx) { return std::make_shared<SpectralCF>(ctx); }});
}

}  // namespace recbole::models

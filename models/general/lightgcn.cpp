#include "models/general/lightgcn.h"

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/layers/losses.h"
#include "recbole/config/config.h"

namespace recbole::models {

LightGCN::LightGCN(const ModelContext& ctx)
    : CachedFactorModel("LightGCN", ctx),
      adjacency_(layers::symmetric_normalized(layers::bipartite_adjacency(ctx.train)),
                 /*symmetric=*/true, ctx.device),
      n_layers_(ctx.config.get_int("n_layers")),
      reg_weight_(ctx.config.get_double("reg_weight")),
      require_pow_(ctx.config.get_bool("require_pow")) {
  const int64_t d = ctx.config.get_int("embedding_size");
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierUniform);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierUniform);
}

std::pair<torch::Tensor, torch::Tensor> LightGCN::propagate() const {
  torch::Tensor all = layers::mean_propagation(
      adjacency_, torch::cat({user_embedding_, item_embedding_}), n_layers_);
  return {all.slice(0, 0, n_users()), all.slice(0, n_users())};
}

torch::Tensor LightGCN::calculate_loss(const data::Batch& batch) {
  drop_factors();
  auto [users, items] = propagate();
  torch::Tensor u = users.index_select(0, batch.users);
  torch::Tensor pos = (u * items.index_select(0, batch.items)).sum(1);
  torch::Tensor neg = (u * items.index_select(0, batch.neg_items)).sum(1);
  torch::Tensor reg = layers::emb_loss(
      {user_embedding_.index_select(0, batch.users), item_embedding_.index_select(0, batch.items),
       item_embedding_.index_select(0, batch.neg_items)},
      require_pow_);
  return layers::bpr_loss(pos, neg) + reg_weight_ * reg;
}

std::pair<torch::Tensor, torch::Tensor> LightGCN::evaluation_factors() { return propagate(); }

RECBOLE_REGISTER_MODEL(LightGCN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"LightGCN",
       Task::kGeneral,
       InputType::kPairwise,
       "Light graph convolution: embeddings averaged over propagation layers",
       {Key("embedding_size", KeyType::kInt).min(1).help("Dimension of user and item embeddings"),
        Key("n_layers", KeyType::kInt).min(1).help("Propagation layers over the user-item graph"),
        Key("reg_weight", KeyType::kFloat).min(0).help("Weight of the layer-0 embedding norm")},
       [](const ModelContext& ctx) { return std::make_shared<LightGCN>(ctx); }});
}

}  // namespace recbole::models

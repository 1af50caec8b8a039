#include "models/general/fism.h"

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "models/layers/history.h"
#include "models/layers/key_checks.h"
#include "models/layers/row_sums.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

FISM::FISM(const ModelContext& ctx) : Model("FISM", ctx) {
  const std::vector<double> reg =
      layers::weight_list(ctx.config, "FISM", "reg_weights", {"p", "q"});
  reg_p_ = reg[0];
  reg_q_ = reg[1];
  scale_ = ctx.device.place(
      layers::history_length_scale(ctx.train, ctx.n_users, ctx.config.get_double("alpha")));
  const int64_t d = keys::embedding_size().get(ctx.config);
  item_src_embedding_ = register_parameter(
      "item_src_embedding", ctx.device.place(torch::empty({ctx.n_items, d}).normal_(0.0, 0.01)));
  item_dst_embedding_ = register_parameter(
      "item_dst_embedding", ctx.device.place(torch::empty({ctx.n_items, d}).normal_(0.0, 0.01)));
  user_bias_ = register_parameter("user_bias", ctx.device.place(torch::zeros({ctx.n_users})));
  item_bias_ = register_parameter("item_bias", ctx.device.place(torch::zeros({ctx.n_items})));
}

torch::Tensor FISM::user_sums(const torch::Tensor& users) {
  const auto [unique, inverse] = layers::distinct_ids(users, device_manager());
  return layers::row_sums(train_, unique, item_src_embedding_, device_manager())
             .index_select(0, inverse) *
         scale_.index_select(0, users).unsqueeze(1);
}

torch::Tensor FISM::predict(const data::Batch& batch) {
  return (user_sums(batch.users) * item_dst_embedding_.index_select(0, batch.items)).sum(1) +
         user_bias_.index_select(0, batch.users) + item_bias_.index_select(0, batch.items);
}

torch::Tensor FISM::calculate_loss(const data::Batch& batch) {
  const torch::Tensor y = torch::sigmoid(predict(batch));
  return torch::binary_cross_entropy_with_logits(y, batch.labels) +
         reg_p_ * item_src_embedding_.norm() + reg_q_ * item_dst_embedding_.norm();
}

torch::Tensor FISM::full_sort_predict(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  return torch::addmm(item_bias_.unsqueeze(0), user_sums(batch.users), item_dst_embedding_.t()) +
         user_bias_.index_select(0, batch.users).unsqueeze(1);
}

RECBOLE_REGISTER_MODEL(FISM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FISM",
       "general",
       InputType::kPointwise,
       "Factored item similarity: a user is the sum of its items' source embeddings",
       {keys::embedding_size().decl("Dimension of the item embeddings"),
        Key("split_to", KeyType::kInt)
            .min(0)
            .help("RecBole's item chunks for its per-user full "
                  "sort; no effect (the full sort is batched)"),
        Key("reg_weights", KeyType::kFloatList).min(0).help("Weights of ‖p‖ and ‖q‖ (two)"),
        Key("alpha", KeyType::kFloat)
            .min(0)
            .help("Exponent of the history-length "
                  "normalisation |R_u|^-alpha")},
       [](const ModelContext& ctx) { return std::make_shared<FISM>(ctx); }});
}

}  // namespace recbole::models

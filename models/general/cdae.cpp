#include "models/general/cdae.h"

#include "models/layers/autoencoder.h"
#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/mlp.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

CDAE::CDAE(const ModelContext& ctx)
    : Model("CDAE", ctx),
      loss_type_(ctx.config.get_string("loss_type")),
      hid_activation_(ctx.config.get_string("hid_activation")),
      out_activation_(ctx.config.get_string("out_activation")),
      corruption_ratio_(ctx.config.get_double("corruption_ratio")),
      reg_weight_1_(ctx.config.get_double("reg_weight_1")),
      reg_weight_2_(ctx.config.get_double("reg_weight_2")) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierNormal);
  h_item_ = register_module("h_item", torch::nn::Linear(ctx.n_items, d));
  out_layer_ = register_module("out_layer", torch::nn::Linear(d, ctx.n_items));
  layers::initialize(*h_item_, layers::Init::kXavierNormal);
  layers::initialize(*out_layer_, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

torch::Tensor CDAE::forward(const torch::Tensor& rows, const torch::Tensor& users) {
  const torch::Tensor corrupted =
      corruption_ratio_ > 0 ? layers::dropout(rows, corruption_ratio_, is_training()) : rows;
  const torch::Tensor h = layers::activate(
      h_item_->forward(corrupted) + user_embedding_.index_select(0, users), hid_activation_);
  return out_layer_->forward(h);
}

torch::Tensor CDAE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  const torch::Tensor out = forward(rows, batch.users);
  namespace F = torch::nn::functional;
  torch::Tensor loss =
      loss_type_ == "MSE"
          ? F::mse_loss(layers::activate(out, out_activation_), rows,
                        F::MSELossFuncOptions().reduction(torch::kSum))
          : F::binary_cross_entropy_with_logits(
                out, rows, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kSum));
  const torch::Tensor& w = h_item_->weight;
  loss = loss + reg_weight_1_ * (user_embedding_.abs().sum() + w.abs().sum());
  loss = loss + reg_weight_2_ * (user_embedding_.norm() + w.norm());
  return loss;
}

torch::Tensor CDAE::full_sort_predict(const data::Batch& batch) {
  return layers::activate(forward(layers::user_rows(batch, train_, device_manager()), batch.users),
                          out_activation_);
}

RECBOLE_REGISTER_MODEL(CDAE) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"CDAE",
       "general",
       InputType::kUserRows,
       "Collaborative denoising autoencoder: corrupted user rows plus a user embedding",
       {Key("loss_type", KeyType::kString).choices({"BCE", "MSE"}).help("Reconstruction loss"),
        Key("hid_activation", KeyType::kString)
            .choices({"sigmoid", "relu", "tanh"})
            .help("Activation of the hidden layer"),
        Key("out_activation", KeyType::kString)
            .choices({"sigmoid", "relu"})
            .help("Activation applied to the output logits for scores (and the MSE loss)"),
        layers::probability_key("corruption_ratio").help("Dropout on the input rows"),
        keys::embedding_size().decl("Hidden layer and user embedding size"),
        Key("reg_weight_1", KeyType::kFloat).min(0).help("L1 weight on the user table and W"),
        Key("reg_weight_2", KeyType::kFloat)
            .min(0)
            .help("L2 (Frobenius) weight on the user "
                  "table and W")},
       [](const ModelContext& ctx) { return std::make_shared<CDAE>(ctx); }});
}

}  // namespace recbole::models

#include "models/sequential/caser.h"

#include "models/layers/dropout.h"
#include "models/layers/horizontal_conv.h"
#include "models/layers/key_checks.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

Caser::Caser(const ModelContext& ctx)
    : SequentialModel("Caser", ctx),
      dropout_(keys::dropout_prob().get(ctx.config)),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t nv = ctx.config.get_int("nv"), nh = ctx.config.get_int("nh");
  const int64_t L = max_len_;
  user_embedding_ = register_parameter("user_embedding", torch::empty({ctx.n_users, d}));
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  conv_v_ = register_module("conv_v", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, nv, {L, 1})));
  for (int64_t h = 1; h <= L; ++h)
    conv_h_.push_back(register_module("conv_h" + std::to_string(h),
                                      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, nh, {h, d}))));
  fc1_ = register_module("fc1", torch::nn::Linear(nv * d + nh * L, d));
  fc2_ = register_module("fc2", torch::nn::Linear(2 * d, d));
  {
    torch::NoGradGuard no_grad;
    const double std = 1.0 / static_cast<double>(d);
    user_embedding_.normal_(0.0, std);
    item_embedding_.normal_(0.0, std);
    for (auto* fc : {&fc1_, &fc2_}) {
      torch::nn::init::xavier_normal_((*fc)->weight);
      (*fc)->bias.zero_();
    }
  }
  to(ctx.device.device());
}

torch::Tensor Caser::encode(const data::Batch& batch) {
  const torch::Tensor x = lookup(layers::item_seq(batch));                     // [B, L, d]
  const torch::Tensor vertical = conv_v_->forward(x.unsqueeze(1)).flatten(1);  // [B, nv·d]
  std::vector<torch::Tensor> weights, biases;
  for (auto& conv : conv_h_) {
    weights.push_back(conv->weight);
    biases.push_back(conv->bias);
  }
  const torch::Tensor horizontal = layers::horizontal_conv_max(x, weights, biases);  // [B, nh·L]
  const torch::Tensor z = torch::relu(fc1_->forward(
      layers::dropout(torch::cat({vertical, horizontal}, 1), dropout_, is_training())));
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  return torch::relu(fc2_->forward(torch::cat({z, u}, 1)));
}

torch::Tensor Caser::calculate_loss(const data::Batch& batch) {
  torch::Tensor reg = user_embedding_.norm() + item_embedding_.norm() + conv_v_->weight.norm() +
                      fc1_->weight.norm() + fc2_->weight.norm();
  for (auto& conv : conv_h_) reg = reg + conv->weight.norm();
  return SequentialModel::calculate_loss(batch) + reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(Caser) {
  using config::Key;
  using config::KeyType;
  register_model({"Caser",
                  "sequential",
                  InputType::kNextItem,
                  "Convolutional sequence embedding: horizontal and vertical convolutions over the "
                  "sequence's item image, joined with the user (RecBole advises a small "
                  "MAX_ITEM_LIST_LENGTH such as 10)",
                  {keys::embedding_size().decl("Dimension of users and items"),
                   keys::dropout_prob().decl("Dropout before fc1"),
                   keys::reg_weight().decl("Weight of the unsquared-norm regulariser"),
                   Key("nv", KeyType::kInt).min(1).help("Vertical filters"),
                   Key("nh", KeyType::kInt).min(1).help("Horizontal filters per height"),
                   Key("loss_type", KeyType::kString)
                       .choices({"CE", "BPR"})
                       .help("CE over every item, or BPR with a sampled negative")},
                  [](const ModelContext& ctx) { return std::make_shared<Caser>(ctx); }});
}

}  // namespace recbole::models

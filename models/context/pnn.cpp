#include "models/context/pnn.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

PNN::PNN(const ModelContext& ctx)
    : ContextModel("PNN", ctx),
      use_inner_(ctx.config.get_bool("use_inner")),
      use_outer_(ctx.config.get_bool("use_outer")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < num_fields_; ++i)
    for (int64_t j = i + 1; j < num_fields_; ++j) r.push_back(i), c.push_back(j);
  const int64_t pairs = static_cast<int64_t>(r.size());
  rows_ = register_buffer("rows", torch::tensor(r, torch::kInt64));
  cols_ = register_buffer("cols", torch::tensor(c, torch::kInt64));
  const std::vector<int64_t> sizes = mlp_sizes(
      ctx, num_fields_ * embedding_size_ + (use_inner_ ? pairs : 0) + (use_outer_ ? pairs : 0));
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config), "relu"));
  predict_ = register_module("predict", torch::nn::Linear(sizes.back(), 1));
  if (use_outer_) {
    torch::NoGradGuard no_grad;
    torch::Tensor k = torch::empty({embedding_size_, pairs, embedding_size_}).uniform_(0, 1);
    torch::nn::init::xavier_uniform_(k);
    kernel_ = register_parameter("kernel", k);
  }
  finish();
}

torch::Tensor PNN::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);  // [B, F, d]
  std::vector<torch::Tensor> parts{e.flatten(1)};
  torch::Tensor p = e.index_select(1, rows_), q = e.index_select(1, cols_);  // [B, P, d]
  if (use_inner_) parts.push_back((p * q).sum(2));
  if (use_outer_) {
    // pair k: Σ_{a,b} q[a] · K[a, k, b] · p[b]
    torch::Tensor kp = (p.unsqueeze(1) * kernel_.unsqueeze(0)).sum(3);  // [B, d, P]
    parts.push_back((kp.transpose(1, 2) * q).sum(2));
  }
  return predict_->forward(mlp_->forward(torch::cat(parts, 1))).squeeze(1);
}

torch::Tensor PNN::regularizer() {
  if (reg_weight_ == 0) return {};  // RecBole adds a zero
  torch::Tensor reg = mlp_->linears()[0]->weight.norm();
  for (size_t k = 1; k < mlp_->linears().size(); ++k) reg = reg + mlp_->linears()[k]->weight.norm();
  return reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(PNN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"PNN",
       "context",
       InputType::kPointwise,
       "PNN: an MLP over the field embeddings and their pairwise inner (and outer) products",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)"),
        Key("use_inner", KeyType::kBool).help("Add the inner products of the field pairs"),
        Key("use_outer", KeyType::kBool)
            .help("Add the outer-product (kernel) terms of the field pairs"),
        keys::reg_weight().decl("Weight of the model's norm regulariser (added once per batch)")},
       [](const ModelContext& ctx) { return std::make_shared<PNN>(ctx); }});
}

}  // namespace recbole::models

#include "models/context/dcn.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

DCN::DCN(const ModelContext& ctx)
    : ContextModel("DCN", ctx), reg_weight_(keys::reg_weight().get(ctx.config)) {
  const int64_t d = num_fields_ * embedding_size_;
  const int64_t layers_n = ctx.config.get_int("cross_layer_num");
  for (int64_t l = 0; l < layers_n; ++l) {
    w_.push_back(register_parameter("cross_w" + std::to_string(l), torch::randn({d})));
    b_.push_back(register_parameter("cross_b" + std::to_string(l), torch::zeros({d})));
  }
  const std::vector<int64_t> sizes = mlp_sizes(ctx, d);
  mlp_ = register_module("mlp", layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config),
                                                   "relu", /*batch_norm=*/true));
  predict_ = register_module("predict", torch::nn::Linear(d + sizes.back(), 1));
  finish();
}

torch::Tensor DCN::logits(const data::Batch& batch) {
  torch::Tensor x0 = embed(batch).flatten(1);  // [B, D]
  torch::Tensor x = x0;
  for (size_t l = 0; l < w_.size(); ++l) x = x0 * x.matmul(w_[l]).unsqueeze(1) + b_[l] + x;
  return predict_->forward(torch::cat({x, mlp_->forward(x0)}, 1)).squeeze(1);
}

torch::Tensor DCN::regularizer() {
  if (w_.empty() || reg_weight_ == 0) return {};
  torch::Tensor reg = w_[0].norm();
  for (size_t l = 1; l < w_.size(); ++l) reg = reg + w_[l].norm();
  return reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(DCN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"DCN",
       "context",
       InputType::kPointwise,
       "DCN: a cross network beside a deep MLP over the concatenated field embeddings",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        Key("cross_layer_num", KeyType::kInt).min(0).help("Number of cross layers"),
        keys::reg_weight().decl("Weight of the model's norm regulariser (added once per batch)"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<DCN>(ctx); }});
}

}  // namespace recbole::models

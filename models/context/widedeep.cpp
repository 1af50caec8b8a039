#include "models/context/widedeep.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

WideDeep::WideDeep(const ModelContext& ctx) : ContextModel("WideDeep", ctx) {
  const std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config), "relu"));
  predict_ = register_module("predict", torch::nn::Linear(sizes.back(), 1));
  finish();
  direct_ = std::make_unique<layers::DirectMLP>(mlp_, predict_);
}

torch::Tensor WideDeep::logits(const data::Batch& batch) {
  torch::Tensor deep = predict_->forward(mlp_->forward(embed(batch).flatten(1)));
  return (first_order(batch) + deep).squeeze(1);
}

RECBOLE_REGISTER_MODEL(WideDeep) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"WideDeep",
       "context",
       InputType::kPointwise,
       "Wide&Deep: first-order weights (the wide part) plus an MLP over the field embeddings",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<WideDeep>(ctx); }});
}

}  // namespace recbole::models

#include "models/context/fnn.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

FNN::FNN(const ModelContext& ctx) : ContextModel("FNN", ctx) {
  const std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config), "tanh"));
  predict_ = register_module("predict", torch::nn::Linear(sizes.back(), 1));
  finish();
}

torch::Tensor FNN::logits(const data::Batch& batch) {
  return predict_->forward(mlp_->forward(embed(batch).flatten(1))).squeeze(1);
}

RECBOLE_REGISTER_MODEL(FNN) {
  using config::Key;
  using config::KeyType;
  register_model({"FNN",
                  "context",
                  InputType::kPointwise,
                  "FNN: an MLP (tanh) over the concatenated field embeddings",
                  {keys::embedding_size().decl("Width of the field embeddings"),
                   keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
                   keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
                  [](const ModelContext& ctx) { return std::make_shared<FNN>(ctx); }});
}

}  // namespace recbole::models

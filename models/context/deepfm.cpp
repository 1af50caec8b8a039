#include "models/context/deepfm.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

DeepFM::DeepFM(const ModelContext& ctx) : ContextModel("DeepFM", ctx) {
  const std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config), "relu"));
  predict_ = register_module("predict", torch::nn::Linear(sizes.back(), 1));
  finish();
  direct_ = std::make_unique<layers::DirectMLP>(mlp_, predict_);
}

torch::Tensor DeepFM::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);
  torch::Tensor deep = predict_->forward(mlp_->forward(e.flatten(1)));
  return (first_order(batch) + layers::fm_interaction(e) + deep).squeeze(1);
}

RECBOLE_REGISTER_MODEL(DeepFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"DeepFM",
       "context",
       InputType::kPointwise,
       "DeepFM: first-order weights, an FM term and an MLP over the shared field embeddings",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<DeepFM>(ctx); }});
}

}  // namespace recbole::models

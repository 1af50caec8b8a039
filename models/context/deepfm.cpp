#include "models/context/deepfm.h"

#include "models/layers/key_checks.h"
#include "recbole/config/config.h"

namespace recbole::models {

DeepFM::DeepFM(const ModelContext& ctx) : ContextModel("DeepFM", ctx) {
  const std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, ctx.config.get_double("dropout_prob"), "relu"));
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
       Task::kContext,
       InputType::kPointwise,
       "DeepFM: first-order weights, an FM term and an MLP over the shared field embeddings",
       {Key("embedding_size", KeyType::kInt).min(1).help("Width of the field embeddings"),
        layers::sizes_key("mlp_hidden_size").help("Sizes of the MLP's hidden layers"),
        layers::probability_key("dropout_prob").help("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<DeepFM>(ctx); }});
}

}  // namespace recbole::models

#include "models/context/nfm.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

NFM::NFM(const ModelContext& ctx) : ContextModel("NFM", ctx) {
  const std::vector<int64_t> sizes = mlp_sizes(ctx, embedding_size_);
  bn_ = register_module("bn", torch::nn::BatchNorm1d(embedding_size_));
  mlp_ = register_module("mlp", layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config),
                                                   "sigmoid", /*batch_norm=*/true));
  predict_ = register_module(
      "predict", torch::nn::Linear(torch::nn::LinearOptions(sizes.back(), 1).bias(false)));
  finish();
}

torch::Tensor NFM::logits(const data::Batch& batch) {
  torch::Tensor f = layers::fm_interaction(embed(batch), /*reduce_sum=*/false);  // [B, d]
  if (is_training() && f.size(0) == 1)
    throw Error("NFM: a training batch of 1 row cannot be batch-normalised");
  torch::Tensor deep = predict_->forward(mlp_->forward(bn_->forward(f)));
  return (first_order(batch) + deep).squeeze(1);
}

RECBOLE_REGISTER_MODEL(NFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NFM",
       "context",
       InputType::kPointwise,
       "NFM: Bi-interaction pooling, BatchNorm and a sigmoid MLP, plus first-order weights",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<NFM>(ctx); }});
}

}  // namespace recbole::models

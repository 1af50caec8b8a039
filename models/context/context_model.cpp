#include "models/context/context_model.h"

#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

const data::FeatureSchema& context_schema(const ModelContext& ctx, const std::string& model) {
  if (ctx.features == nullptr)
    throw ConfigError("model: " + model +
                      " is a context model and needs the feature fields that the context task "
                      "pipeline prepares");
  return *ctx.features;
}

ContextModel::ContextModel(std::string name, const ModelContext& ctx)
    : Model(name, ctx),
      fields_(context_schema(ctx, name)),
      embedding_size_(ctx.config.get_int("embedding_size")),
      num_fields_(fields_.size()) {
  embedding_ = register_module("embedding", layers::ContextEmbedding(fields_, embedding_size_));
  first_order_ = register_module("first_order", layers::FirstOrderLinear(fields_));
}

void ContextModel::finish(bool init_linears) {
  layers::xavier_init_context(*this, init_linears);
  to(device_manager().device());
}

torch::Tensor ContextModel::calculate_loss(const data::Batch& batch) {
  torch::Tensor z = logits(batch);
  const torch::Tensor& y = batch.labels;
  torch::Tensor loss;
  if (probability_output()) {
    // PyTorch's BCELoss: each log clamped at -100, and a backward that stays finite where the
    // probability saturates at 0 or 1 (clamping log(z) by hand gives 0 · inf = NaN there).
    loss = torch::binary_cross_entropy(z, y);
  } else {
    loss = torch::binary_cross_entropy_with_logits(z, y);
  }
  torch::Tensor reg = regularizer();
  return reg.defined() ? loss + reg : loss;
}

torch::Tensor ContextModel::predict(const data::Batch& batch) {
  torch::Tensor z = logits(batch);
  return probability_output() ? z : torch::sigmoid(z);
}

torch::Tensor ContextModel::full_sort_predict(const data::Batch&) {
  throw ConfigError("model: " + name() +
                    " is a context model: it scores labelled rows (eval_args mode labeled); "
                    "ranking all items for a user is not supported yet");
}

}  // namespace recbole::models

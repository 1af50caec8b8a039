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

ContextModel::ContextModel(std::string name, const ModelContext& ctx, bool towers)
    : Model(name, ctx),
      fields_(context_schema(ctx, name), towers),
      embedding_size_(ctx.config.get_int("embedding_size")),
      num_fields_(fields_.size()) {
  embedding_ = register_module("embedding", layers::ContextEmbedding(fields_, embedding_size_));
  first_order_ = register_module("first_order", layers::FirstOrderLinear(fields_));
}

std::vector<int64_t> ContextModel::mlp_sizes(const ModelContext& ctx, int64_t input_width) {
  std::vector<int64_t> sizes{input_width};
  for (int64_t h : ctx.config.get_int_list("mlp_hidden_size")) sizes.push_back(h);
  return sizes;
}

void ContextModel::refuse_field_map(const ModelContext& ctx) const {
  if (!ctx.config.is_null("fields"))
    throw ConfigError(ctx.config.source("fields") + ": " + name() +
                      ": fields: a field map is a RecBole option not supported yet; expected null "
                      "(every feature its own field)");
}

config::Key field_map_key() {
  return config::Key("fields", config::KeyType::kMap)
      .null()
      .help("Field map {id: [features]} (only null, every feature its own field, is supported)");
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

#include "models/context/fwfm.h"

#include <vector>

#include "models/layers/key_checks.h"
#include "recbole/config/config.h"

namespace recbole::models {

FwFM::FwFM(const ModelContext& ctx) : ContextModel("FwFM", ctx) {
  refuse_field_map(ctx);
  std::vector<int64_t> left, right;
  for (int64_t i = 0; i < num_fields_; ++i)
    for (int64_t j = i + 1; j < num_fields_; ++j) left.push_back(i), right.push_back(j);
  left_ = register_buffer("left", torch::tensor(left, torch::kInt64));
  right_ = register_buffer("right", torch::tensor(right, torch::kInt64));
  pair_weights_ = register_buffer("pair_weights", torch::randn({num_fields_, num_fields_}));
  dropout_ = register_module("dropout", torch::nn::Dropout(ctx.config.get_double("dropout_prob")));
  finish(/*init_linears=*/false);
}

torch::Tensor FwFM::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);                                                       // [B, F, d]
  torch::Tensor r = pair_weights_.index({left_, right_}).view({1, -1, 1});              // [1, P, 1]
  torch::Tensor v = (e.index_select(1, left_) * e.index_select(1, right_) * r).sum(1);  // [B, d]
  return first_order(batch).squeeze(1) + dropout_->forward(v).sum(1);
}

RECBOLE_REGISTER_MODEL(FwFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FwFM",
       Task::kContext,
       InputType::kPointwise,
       "field-weighted factorisation machine: pair products weighted per field pair (fixed "
       "N(0, 1) weights), plus first-order weights",
       {Key("embedding_size", KeyType::kInt).min(1).help("Width of the field embeddings"),
        layers::probability_key("dropout_prob").help("Dropout on the pooled pair products"),
        field_map_key()},
       [](const ModelContext& ctx) { return std::make_shared<FwFM>(ctx); }});
}

}  // namespace recbole::models

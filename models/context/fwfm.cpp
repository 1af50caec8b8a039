#include "models/context/fwfm.h"

#include <algorithm>
#include <vector>

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

FwFM::FwFM(const ModelContext& ctx) : ContextModel("FwFM", ctx) {
  // Fields by name, for E's positions (RecBole applies its token-first numbering to E's
  // token_seq-first positions; docs/models.md).
  const std::vector<int64_t> field = field_map(ctx, fields_.names());
  const int64_t k = *std::max_element(field.begin(), field.end()) + 1;
  std::vector<int64_t> left, right, left_field, right_field;
  for (int64_t i = 0; i < num_fields_; ++i)
    for (int64_t j = i + 1; j < num_fields_; ++j) {
      left.push_back(i), right.push_back(j);
      left_field.push_back(field[static_cast<size_t>(i)]);
      right_field.push_back(field[static_cast<size_t>(j)]);
    }
  left_ = register_buffer("left", torch::tensor(left, torch::kInt64));
  right_ = register_buffer("right", torch::tensor(right, torch::kInt64));
  left_field_ = register_buffer("left_field", torch::tensor(left_field, torch::kInt64));
  right_field_ = register_buffer("right_field", torch::tensor(right_field, torch::kInt64));
  pair_weights_ = register_buffer("pair_weights", torch::randn({k, k}));
  dropout_ = keys::dropout_prob().get(ctx.config);
  finish(/*init_linears=*/false);
}

torch::Tensor FwFM::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);                                                       // [B, F, d]
  torch::Tensor r = pair_weights_.index({left_field_, right_field_}).view({1, -1, 1});  // [1, P, 1]
  torch::Tensor v = (e.index_select(1, left_) * e.index_select(1, right_) * r).sum(1);  // [B, d]
  return first_order(batch).squeeze(1) + layers::dropout(v, dropout_, is_training()).sum(1);
}

RECBOLE_REGISTER_MODEL(FwFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FwFM",
       "context",
       InputType::kPointwise,
       "field-weighted factorisation machine: pair products weighted per field pair (fixed "
       "N(0, 1) weights), plus first-order weights",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::dropout_prob().decl("Dropout on the pooled pair products"), field_map_key()},
       [](const ModelContext& ctx) { return std::make_shared<FwFM>(ctx); }});
}

}  // namespace recbole::models

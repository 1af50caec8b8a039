#include "models/context/dssm.h"

#include <vector>

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

DSSM::DSSM(const ModelContext& ctx) : ContextModel("DSSM", ctx, /*towers=*/true) {
  std::vector<int64_t> user, item;
  const std::vector<data::FeatureSide> sides = fields_.sides();
  for (size_t k = 0; k < sides.size(); ++k)
    (sides[k] == data::FeatureSide::kUser ? user : item).push_back(static_cast<int64_t>(k));
  if (user.empty() || item.empty())
    throw ConfigError("model: DSSM needs user-side and item-side feature fields (load_col)");
  user_positions_ = register_buffer("user_positions", torch::tensor(user, torch::kInt64));
  item_positions_ = register_buffer("item_positions", torch::tensor(item, torch::kInt64));
  const double dropout = keys::dropout_prob().get(ctx.config);
  const auto tower = [&](const char* name, size_t n) {
    return register_module(
        name, layers::ContextMLP(mlp_sizes(ctx, static_cast<int64_t>(n) * embedding_size_), dropout,
                                 "tanh", /*batch_norm=*/true));
  };
  user_tower_ = tower("user_tower", user.size());
  item_tower_ = tower("item_tower", item.size());
  finish();
}

torch::Tensor DSSM::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);  // [B, F, d]
  torch::Tensor u = user_tower_->forward(e.index_select(1, user_positions_).flatten(1));
  torch::Tensor v = item_tower_->forward(e.index_select(1, item_positions_).flatten(1));
  return torch::cosine_similarity(u, v, /*dim=*/1, /*eps=*/1e-8);
}

RECBOLE_REGISTER_MODEL(DSSM) {
  using config::Key;
  using config::KeyType;
  register_model({"DSSM",
                  "context",
                  InputType::kPointwise,
                  "two-tower DSSM: user and item MLPs (tanh, BatchNorm), cosine of their outputs",
                  {keys::embedding_size().decl("Width of the field embeddings"),
                   keys::mlp_hidden_size().decl("Sizes of each tower's hidden layers"),
                   keys::dropout_prob().decl("Dropout before every tower layer, in [0, 1)"),
                   Key("double_tower", KeyType::kBool)
                       .help("User and item towers over their own fields (false reads the same: a "
                             "DSSM tower never sees interaction-side features)")},
                  [](const ModelContext& ctx) { return std::make_shared<DSSM>(ctx); }});
}

}  // namespace recbole::models

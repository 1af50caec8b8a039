#include "models/general/dmf.h"

#include <vector>

#include <torch/torch.h>

#include "models/layers/history.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/row_sums.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {
namespace {

// The towers of the distinct ids of a batch, gathered back to its rows: a batch repeats its
// users and items many times.
torch::Tensor tower_of_rows(const data::InteractionMatrix& m, const torch::Tensor& ids,
                            const torch::Tensor& table, layers::MLP& tower,
                            const DeviceManager& device) {
  const auto [unique, inverse] = layers::distinct_ids(ids, device);
  return tower->forward(layers::row_sums(m, unique, table, device)).index_select(0, inverse);
}

std::vector<int64_t> with_front(int64_t first, std::vector<int64_t> rest) {
  rest.insert(rest.begin(), first);
  return rest;
}

}  // namespace

DMF::DMF(const ModelContext& ctx) : Model("DMF", ctx), item_users_(layers::transpose(ctx.train)) {
  if (ctx.config.get_string("inter_matrix_type") != "01")
    throw ConfigError(ctx.config.source("inter_matrix_type") +
                      ": DMF: inter_matrix_type: 'rating' is not supported yet (the model sees "
                      "the binary training matrix only); expected '01'");
  const std::vector<int64_t> user_sizes = ctx.config.get_int_list("user_hidden_size_list");
  const std::vector<int64_t> item_sizes = ctx.config.get_int_list("item_hidden_size_list");
  if (user_sizes.back() != item_sizes.back())
    throw ConfigError(
        "DMF: user_hidden_size_list and item_hidden_size_list must end with the "
        "same size (the towers meet in a dot product); got " +
        std::to_string(user_sizes.back()) + " and " + std::to_string(item_sizes.back()));
  const int64_t du = ctx.config.get_int("user_embedding_size");
  const int64_t di = ctx.config.get_int("item_embedding_size");
  // Every Linear N(0, 0.01²) with zero biases, as RecBole, on the CPU before moving.
  user_item_weight_ =
      register_parameter("user_item_weight", torch::empty({ctx.n_items, du}).normal_(0.0, 0.01));
  item_user_weight_ =
      register_parameter("item_user_weight", torch::empty({ctx.n_users, di}).normal_(0.0, 0.01));
  user_tower_ = register_module("user_tower", layers::MLP(with_front(du, user_sizes), 0, "relu"));
  item_tower_ = register_module("item_tower", layers::MLP(with_front(di, item_sizes), 0, "relu"));
  // Submodules only: the model itself is not yet held by a shared_ptr (Module::modules).
  layers::normal_linears(*user_tower_, 0.01);
  layers::normal_linears(*item_tower_, 0.01);
  to(ctx.device.device());
}

torch::Tensor DMF::user_vectors(const torch::Tensor& users) {
  return tower_of_rows(train_, users, user_item_weight_, user_tower_, device_manager());
}

torch::Tensor DMF::item_vectors(const torch::Tensor& items) {
  return tower_of_rows(item_users_, items, item_user_weight_, item_tower_, device_manager());
}

torch::Tensor DMF::calculate_loss(const data::Batch& batch) {
  item_cache_ = torch::Tensor();
  const torch::Tensor logits = (user_vectors(batch.users) * item_vectors(batch.items)).sum(1);
  return torch::binary_cross_entropy_with_logits(logits, batch.labels);
}

torch::Tensor DMF::predict(const data::Batch& batch) {
  return torch::sigmoid((user_vectors(batch.users) * item_vectors(batch.items)).sum(1));
}

void DMF::before_evaluation() {
  torch::NoGradGuard no_grad;
  item_cache_ = item_tower_->forward(layers::row_sums(
      item_users_, torch::arange(n_items(), torch::kInt64), item_user_weight_, device_manager()));
}

const torch::Tensor& DMF::item_cache() {
  if (!item_cache_.defined()) before_evaluation();
  return item_cache_;
}

torch::Tensor DMF::full_sort_predict(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  return torch::sigmoid(torch::matmul(user_vectors(batch.users), item_cache().t()));
}

RECBOLE_REGISTER_MODEL(DMF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"DMF",
       "general",
       InputType::kPointwise,
       "Deep matrix factorisation: MLP towers over a user's row and an item's column",
       {Key("inter_matrix_type", KeyType::kString)
            .choices({"01", "rating"})
            .help("Matrix the towers read: '01' (binary); 'rating' is not supported yet"),
        Key("user_embedding_size", KeyType::kInt).min(1).help("Output of the user's first layer"),
        Key("item_embedding_size", KeyType::kInt).min(1).help("Output of the item's first layer"),
        layers::sizes_key("user_hidden_size_list").help("Sizes of the user tower's layers"),
        layers::sizes_key("item_hidden_size_list").help("Sizes of the item tower's layers"),
        keys::embedding_size().decl("Unused (RecBole declares it)")},
       [](const ModelContext& ctx) { return std::make_shared<DMF>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/nncf.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/layers/history.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/row_sums.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {
namespace {

// Items per block of the batched MLP (a few hundred KiB per intermediate).
constexpr int64_t kNNCFBlockRows = 2048;

// For each row of m, n column ids drawn uniformly with replacement from the row (zeros for an
// empty row): RecBole's 'random' neighbourhoods. [rows, n] int64 on the host.
torch::Tensor random_neighbours(const data::InteractionMatrix& m, int64_t n, uint64_t seed) {
  torch::Tensor out = torch::zeros({m.n_users(), n}, torch::kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  std::mt19937_64 rng(seed);
  for (int32_t r = 0; r < m.n_users(); ++r) {
    const int64_t deg = m.row_size(r);
    if (deg == 0) continue;
    std::uniform_int_distribution<int64_t> pick(0, deg - 1);
    for (int64_t k = 0; k < n; ++k) o[r * n + k] = m.row_begin(r)[pick(rng)];
  }
  return out;
}

}  // namespace

NNCF::NNCF(const ModelContext& ctx)
    : Model("NNCF", ctx),
      d_(ctx.config.get_int("ui_embedding_size")),
      pool_(ctx.config.get_int("pool_kernel_size")) {
  const std::string method = ctx.config.get_string("neigh_info_method");
  if (method != "random")
    throw ConfigError(ctx.config.source("neigh_info_method") + ": NNCF: neigh_info_method: '" +
                      method + "' is not supported yet; expected 'random'");
  const int64_t n = ctx.config.get_int("neigh_num");
  const int64_t e = ctx.config.get_int("neigh_embedding_size");
  const int64_t kernels = ctx.config.get_int("num_conv_kernel");
  const int64_t k = ctx.config.get_int("conv_kernel_size");
  const int64_t conved = n - (k - 1);
  if (conved < pool_)
    throw ConfigError("NNCF: neigh_num " + std::to_string(n) + " leaves " + std::to_string(conved) +
                      " positions after conv_kernel_size " + std::to_string(k) +
                      ", fewer than pool_kernel_size " + std::to_string(pool_) +
                      "; expected neigh_num >= conv_kernel_size + " + "pool_kernel_size - 1");
  const int64_t features = (conved / pool_) * kernels;
  const uint64_t seed = ctx.device.base_seed();
  user_neighbours_ = ctx.device.place(random_neighbours(ctx.train, n, seed));
  item_neighbours_ = ctx.device.place(random_neighbours(layers::transpose(ctx.train), n, seed + 1));
  user_embedding_ = register_table("user_embedding", ctx.n_users, d_, layers::Init::kNormal001);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d_, layers::Init::kNormal001);
  user_neigh_embedding_ =
      register_table("user_neigh_embedding", ctx.n_items, e, layers::Init::kNormal001);
  item_neigh_embedding_ =
      register_table("item_neigh_embedding", ctx.n_users, e, layers::Init::kNormal001);
  user_conv_ = register_module("user_conv", torch::nn::Conv1d(e, kernels, k));
  item_conv_ = register_module("item_conv", torch::nn::Conv1d(e, kernels, k));
  std::vector<int64_t> sizes{d_ + 2 * features};
  for (int64_t h : keys::mlp_hidden_size().get(ctx.config)) sizes.push_back(h);
  mlp_ = register_module("mlp", layers::MLP(sizes, ctx.config.get_double("dropout"), "relu"));
  out_layer_ = register_module("out_layer", torch::nn::Linear(sizes.back(), 1));
  to(ctx.device.device());
}

namespace {

// Conv → max-pool → ReLU over the neighbours' embeddings of the distinct ids, gathered back.
torch::Tensor conv_features(const torch::Tensor& ids, const torch::Tensor& neighbours,
                            const torch::Tensor& table, torch::nn::Conv1d& conv, int64_t pool,
                            const DeviceManager& device) {
  auto [unique, inverse] = layers::distinct_ids(ids, device);
  unique = device.place(unique);
  const torch::Tensor nb = neighbours.index_select(0, unique);  // [U, n]
  const torch::Tensor x =
      table.index_select(0, nb.reshape(-1)).view({nb.size(0), nb.size(1), table.size(1)});
  const torch::Tensor y = torch::relu(torch::max_pool1d(conv->forward(x.permute({0, 2, 1})), pool));
  return y.flatten(1).index_select(0, inverse);
}

}  // namespace

torch::Tensor NNCF::user_features(const torch::Tensor& users) {
  return conv_features(users, user_neighbours_, user_neigh_embedding_, user_conv_, pool_,
                       device_manager());
}

torch::Tensor NNCF::item_features(const torch::Tensor& items) {
  return conv_features(items, item_neighbours_, item_neigh_embedding_, item_conv_, pool_,
                       device_manager());
}

torch::Tensor NNCF::logits(const torch::Tensor& users, const torch::Tensor& items) {
  const torch::Tensor mf =
      user_embedding_.index_select(0, users) * item_embedding_.index_select(0, items);
  const torch::Tensor x = torch::cat({mf, user_features(users), item_features(items)}, 1);
  return out_layer_->forward(mlp_->forward(x)).squeeze(1);
}

torch::Tensor NNCF::calculate_loss(const data::Batch& batch) {
  user_cache_ = item_cache_ = torch::Tensor();
  return torch::binary_cross_entropy_with_logits(logits(batch.users, batch.items), batch.labels);
}

torch::Tensor NNCF::predict(const data::Batch& batch) {
  return torch::sigmoid(logits(batch.users, batch.items));
}

void NNCF::before_evaluation() {
  torch::NoGradGuard no_grad;
  const torch::TensorOptions ids = user_neighbours_.options();
  user_cache_ = user_features(torch::arange(n_users(), ids));
  item_cache_ = item_features(torch::arange(n_items(), ids));
}

torch::Tensor NNCF::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  const int64_t b = users.size(0);
  if (is_training()) {
    // Dropout before the first layer breaks its split: score the pairs one by one.
    const torch::Tensor items = torch::arange(n_items(), users.options()).repeat({b});
    return torch::sigmoid(logits(users.repeat_interleave(n_items()), items)).view({b, n_items()});
  }
  torch::NoGradGuard no_grad;
  if (!user_cache_.defined()) before_evaluation();
  const auto& linears = mlp_->linears();
  const torch::Tensor& w1 = linears[0]->weight;  // [h1, d + 2F]
  const int64_t f = user_cache_.size(1);
  const torch::Tensor w_mf = w1.narrow(1, 0, d_).t();  // [d, h1]
  const torch::Tensor pu =
      torch::matmul(user_cache_.index_select(0, users), w1.narrow(1, d_, f).t());  // [B, h1]
  const torch::Tensor qi =
      torch::addmm(linears[0]->bias, item_cache_, w1.narrow(1, d_ + f, f).t());  // [n_items, h1]
  const torch::Tensor eu = user_embedding_.index_select(0, users);
  torch::Tensor out = torch::empty({b, n_items()}, eu.options());
  const int64_t blocks_per_user = (n_items() + kNNCFBlockRows - 1) / kNNCFBlockRows;
  // One task per (user, block of items), each writing its own slice of `out`.
  auto task = [&](int64_t t, int) {
    torch::NoGradGuard task_no_grad;  // grad mode is per thread
    const int64_t r = t / blocks_per_user;
    const int64_t i0 = (t % blocks_per_user) * kNNCFBlockRows;
    const int64_t w = std::min(kNNCFBlockRows, n_items() - i0);
    // (e_u ⊙ e_i) W_mfᵀ = e_i (diag(e_u) W_mfᵀ).
    torch::Tensor h = torch::relu(torch::addmm(
        qi.narrow(0, i0, w) + pu[r], item_embedding_.narrow(0, i0, w), w_mf * eu[r].unsqueeze(1)));
    for (size_t k = 1; k < linears.size(); ++k)
      h = torch::relu(torch::addmm(linears[k]->bias, h, linears[k]->weight.t()));
    out[r].narrow(0, i0, w).copy_(
        torch::addmm(out_layer_->bias, h, out_layer_->weight.t()).squeeze(1));
  };
  const int64_t n_tasks = b * blocks_per_user;
  if (out.is_cuda()) {
    for (int64_t t = 0; t < n_tasks; ++t) task(t, 0);
  } else {
    BlasThreadsScope one_blas_thread(1);  // each worker runs its own small GEMMs
    parallel_for(n_tasks, task);
  }
  return out.sigmoid_();
}

RECBOLE_REGISTER_MODEL(NNCF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NNCF",
       "general",
       InputType::kPointwise,
       "Neighbourhood-based neural CF: GMF plus convolutions over sampled neighbours",
       {Key("ui_embedding_size", KeyType::kInt).min(1).help("Dimension of user/item embeddings"),
        Key("neigh_embedding_size", KeyType::kInt)
            .min(1)
            .help("Dimension of neighbour "
                  "embeddings"),
        Key("num_conv_kernel", KeyType::kInt).min(1).help("Output channels of each convolution"),
        Key("conv_kernel_size", KeyType::kInt).min(1).help("Width of the convolution kernel"),
        Key("pool_kernel_size", KeyType::kInt).min(1).help("Width (and stride) of the max pool"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's layers"),
        Key("neigh_num", KeyType::kInt).min(1).help("Neighbours drawn per user and per item"),
        layers::probability_key("dropout").help("Dropout before every MLP layer, in [0, 1)"),
        Key("neigh_info_method", KeyType::kString)
            .choices({"random", "knn", "louvain"})
            .help("How neighbourhoods are built: 'random' (knn, louvain not supported yet)"),
        Key("resolution", KeyType::kFloat).above(0).help("Louvain resolution (unused)")},
       [](const ModelContext& ctx) { return std::make_shared<NNCF>(ctx); }});
}

}  // namespace recbole::models

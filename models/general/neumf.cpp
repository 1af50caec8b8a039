#include "models/general/neumf.h"

#include <algorithm>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {
namespace {

// Rows of a block of the batched MLP: 2048 × 128 floats (1 MiB) per intermediate stays in cache.
constexpr int64_t kNeuMFBlockRows = 2048;

}  // namespace

NeuMF::NeuMF(const ModelContext& ctx)
    : Model("NeuMF", ctx),
      mf_dim_(ctx.config.get_int("mf_embedding_size")),
      mlp_dim_(ctx.config.get_int("mlp_embedding_size")),
      mf_train_(ctx.config.get_bool("mf_train")),
      mlp_train_(ctx.config.get_bool("mlp_train")) {
  if (ctx.config.get_bool("use_pretrain"))
    throw ConfigError(ctx.config.source("use_pretrain") +
                      ": NeuMF: use_pretrain: true is not supported yet; expected false");
  if (!mf_train_ && !mlp_train_)
    throw ConfigError("NeuMF: mf_train and mlp_train are both false; expected at least one true");
  const std::vector<int64_t> hidden = keys::mlp_hidden_size().get(ctx.config);
  user_mf_embedding_ =
      register_table("user_mf_embedding", ctx.n_users, mf_dim_, layers::Init::kNormal001);
  item_mf_embedding_ =
      register_table("item_mf_embedding", ctx.n_items, mf_dim_, layers::Init::kNormal001);
  user_mlp_embedding_ =
      register_table("user_mlp_embedding", ctx.n_users, mlp_dim_, layers::Init::kNormal001);
  item_mlp_embedding_ =
      register_table("item_mlp_embedding", ctx.n_items, mlp_dim_, layers::Init::kNormal001);
  std::vector<int64_t> sizes{2 * mlp_dim_};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  mlp_ = register_module("mlp", layers::MLP(sizes, keys::dropout_prob().get(ctx.config), "relu"));
  // As RecBole, the unused branch's modules exist; the output layer reads only the used ones.
  const int64_t in = (mf_train_ ? mf_dim_ : 0) + (mlp_train_ ? hidden.back() : 0);
  predict_layer_ = register_module("predict_layer", torch::nn::Linear(in, 1));
  to(ctx.device.device());
}

torch::Tensor NeuMF::logits(const torch::Tensor& users, const torch::Tensor& items) {
  std::vector<torch::Tensor> parts;
  if (mf_train_)
    parts.push_back(user_mf_embedding_.index_select(0, users) *
                    item_mf_embedding_.index_select(0, items));
  if (mlp_train_)
    parts.push_back(mlp_->forward(torch::cat(
        {user_mlp_embedding_.index_select(0, users), item_mlp_embedding_.index_select(0, items)},
        1)));
  return predict_layer_->forward(torch::cat(parts, 1)).squeeze(1);
}

torch::Tensor NeuMF::calculate_loss(const data::Batch& batch) {
  return torch::binary_cross_entropy_with_logits(logits(batch.users, batch.items), batch.labels);
}

torch::Tensor NeuMF::predict(const data::Batch& batch) {
  return torch::sigmoid(logits(batch.users, batch.items));
}

void NeuMF::add_mlp_scores(const torch::Tensor& users, torch::Tensor& out) const {
  const auto& linears = mlp_->linears();
  const torch::Tensor& w1 = linears[0]->weight;  // [h1, 2 d]
  const torch::Tensor pu = torch::matmul(user_mlp_embedding_.index_select(0, users),
                                         w1.narrow(1, 0, mlp_dim_).t());  // [B, h1]
  const torch::Tensor qi = torch::addmm(linears[0]->bias, item_mlp_embedding_,
                                        w1.narrow(1, mlp_dim_, mlp_dim_).t());  // [n_items, h1]
  const torch::Tensor w_out =
      predict_layer_->weight.narrow(1, mf_train_ ? mf_dim_ : 0, linears.back()->weight.size(0));
  const int64_t blocks_per_user = (n_items() + kNeuMFBlockRows - 1) / kNeuMFBlockRows;
  // One task per (user, block of items); each writes its own slice of `out`, so the result does
  // not depend on the thread count.
  auto task = [&](int64_t t, int) {
    torch::NoGradGuard no_grad;  // grad mode is per thread
    const int64_t b = t / blocks_per_user;
    const int64_t i0 = (t % blocks_per_user) * kNeuMFBlockRows;
    const int64_t w = std::min(kNeuMFBlockRows, n_items() - i0);
    torch::Tensor h = torch::relu(qi.narrow(0, i0, w) + pu[b]);
    for (size_t k = 1; k < linears.size(); ++k)
      h = torch::relu(torch::addmm(linears[k]->bias, h, linears[k]->weight.t()));
    out[b].narrow(0, i0, w).add_(torch::matmul(h, w_out.t()).squeeze(1));
  };
  const int64_t n_tasks = users.size(0) * blocks_per_user;
  if (out.is_cuda()) {
    for (int64_t t = 0; t < n_tasks; ++t) task(t, 0);
    return;
  }
  BlasThreadsScope one_blas_thread(1);  // each worker runs its own small GEMMs
  parallel_for(n_tasks, task);
}

torch::Tensor NeuMF::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  if (is_training()) {
    // Dropout before the first layer breaks the split of W₁: score the pairs one by one.
    const int64_t b = users.size(0);
    const torch::Tensor items = torch::arange(n_items(), users.options()).repeat({b});
    return torch::sigmoid(logits(users.repeat_interleave(n_items()), items)).view({b, n_items()});
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor bias = predict_layer_->bias;
  torch::Tensor out = bias.expand({users.size(0), n_items()}).contiguous();
  if (mf_train_) {
    const torch::Tensor w_mf = predict_layer_->weight.narrow(1, 0, mf_dim_).squeeze(0);
    out.addmm_(user_mf_embedding_.index_select(0, users) * w_mf, item_mf_embedding_.t());
  }
  if (mlp_train_) add_mlp_scores(users, out);
  return out.sigmoid_();
}

RECBOLE_REGISTER_MODEL(NeuMF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NeuMF",
       "general",
       InputType::kPointwise,
       "Neural matrix factorisation: a GMF branch and an MLP branch joined into one logit",
       {Key("mf_embedding_size", KeyType::kInt).min(1).help("Dimension of the GMF embeddings"),
        Key("mlp_embedding_size", KeyType::kInt).min(1).help("Dimension of the MLP embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)"),
        Key("mf_train", KeyType::kBool).help("Use the GMF branch"),
        Key("mlp_train", KeyType::kBool).help("Use the MLP branch"),
        Key("use_pretrain", KeyType::kBool).help("Load pretrained branches (not supported yet)"),
        Key("mf_pretrain_path", KeyType::kString).null().help("Pretrained GMF file (unused)"),
        Key("mlp_pretrain_path", KeyType::kString).null().help("Pretrained MLP file (unused)")},
       [](const ModelContext& ctx) { return std::make_shared<NeuMF>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/bpr.h"

#include <torch/torch.h>

#include "recbole/config/config.h"

namespace recbole::models {

BPR::BPR(const ModelContext& ctx) : Model("BPR", ctx) {
  const int64_t d = ctx.config.get_int("embedding_size");
  // Initialised on the CPU from the seeded CPU generator, so a seed gives the same weights on
  // every device; then moved once by the device manager.
  torch::Tensor u = torch::empty({ctx.n_users, d});
  torch::Tensor i = torch::empty({ctx.n_items, d});
  torch::nn::init::xavier_normal_(u);
  torch::nn::init::xavier_normal_(i);
  user_embedding_ = register_parameter("user_embedding", ctx.device.place(u));
  item_embedding_ = register_parameter("item_embedding", ctx.device.place(i));
}

torch::Tensor BPR::calculate_loss(const TrainBatch& batch) {
  torch::Tensor u = user_embedding_.index_select(0, batch.users);
  torch::Tensor pos = (u * item_embedding_.index_select(0, batch.pos_items)).sum(1);
  torch::Tensor neg = (u * item_embedding_.index_select(0, batch.neg_items)).sum(1);
  return -torch::log(1e-10 + torch::sigmoid(pos - neg)).mean();
}

torch::Tensor BPR::full_sort_predict(const torch::Tensor& users) {
  return torch::matmul(user_embedding_.index_select(0, users), item_embedding_.t());
}

torch::Tensor BPR::predict(const torch::Tensor& users, const torch::Tensor& items) {
  return (user_embedding_.index_select(0, users) * item_embedding_.index_select(0, items)).sum(1);
}

void register_bpr() {
  register_model("BPR", "Bayesian personalised ranking over user/item embeddings (pairwise)",
                 [](const ModelContext& ctx) { return std::make_shared<BPR>(ctx); });
}

}  // namespace recbole::models

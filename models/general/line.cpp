#include "models/general/line.h"

#include <algorithm>
#include <random>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

namespace {

// A uniform double in [0, 1) from 53 bits (the same with any standard library).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// −mean log σ(sign · s), as −logsigmoid (finite where RecBole's log σ underflows to −inf).
torch::Tensor neg_log_sigmoid(const torch::Tensor& s, bool positive) {
  return -torch::log_sigmoid(positive ? s : -s).mean();
}

torch::Tensor row_dot(const torch::Tensor& a, const torch::Tensor& b) { return (a * b).sum(1); }

}  // namespace

LINE::LINE(const ModelContext& ctx)
    : Model("LINE", ctx),
      item_users_(transpose(ctx.train)),
      order_(ctx.config.get_int("order")),
      second_order_weight_(ctx.config.get_double("second_order_loss_weight")),
      seed_(static_cast<uint64_t>(ctx.config.get_int("seed"))) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  const auto table = [&](const char* name, int64_t rows) {
    return register_table(name, rows, d, layers::Init::kXavierNormal);
  };
  user_embedding_ = table("user_embedding", ctx.n_users);
  item_embedding_ = table("item_embedding", ctx.n_items);
  if (order_ == 2) {
    user_context_embedding_ = table("user_context_embedding", ctx.n_users);
    item_context_embedding_ = table("item_context_embedding", ctx.n_items);
  }
}

LINE::Draws LINE::batch_draws(int64_t epoch, int64_t batch,
                              const std::vector<int64_t>& items) const {
  std::mt19937_64 rng(
      splitmix64_hash(splitmix64_hash(splitmix64_hash(seed_) ^ static_cast<uint64_t>(epoch)) ^
                      static_cast<uint64_t>(batch)));
  Draws out;
  out.negative_users = uniform(rng) >= 0.5;  // RecBole: random() < 0.5 takes sampled items
  if (!out.negative_users) return out;
  const int64_t candidates = n_users() - 1;  // real users 1..n_users−1
  out.users.reserve(items.size());
  for (const int64_t item : items) {
    const int32_t* begin = item_users_.indices.data() + item_users_.indptr[item];
    const int32_t* end = item_users_.indices.data() + item_users_.indptr[item + 1];
    // An item every user has seen has no negative user: take any (RecBole would loop forever).
    const bool exhausted = end - begin >= candidates;
    int64_t u = 0;
    do {
      u = 1 + static_cast<int64_t>(uniform(rng) * static_cast<double>(candidates));
    } while (!exhausted && std::binary_search(begin, end, static_cast<int32_t>(u)));
    out.users.push_back(u);
  }
  return out;
}

torch::Tensor LINE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor items_cpu = DeviceManager::to_host(batch.items).contiguous();
  const std::vector<int64_t> items(items_cpu.data_ptr<int64_t>(),
                                   items_cpu.data_ptr<int64_t>() + items_cpu.numel());
  const Draws draws = batch_draws(epoch_, batch_++, items);

  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  const torch::Tensor pos = item_embedding_.index_select(0, batch.items);
  torch::Tensor loss = neg_log_sigmoid(row_dot(u, pos), true);
  if (!draws.negative_users) {
    const torch::Tensor neg = item_embedding_.index_select(0, batch.neg_items);
    loss = loss + neg_log_sigmoid(row_dot(u, neg), false);
    if (order_ == 2) {
      const torch::Tensor ctx_pos = item_context_embedding_.index_select(0, batch.items);
      const torch::Tensor ctx_neg = item_context_embedding_.index_select(0, batch.neg_items);
      loss = loss + second_order_weight_ * (neg_log_sigmoid(row_dot(u, ctx_pos), true) +
                                            neg_log_sigmoid(row_dot(u, ctx_neg), false));
    }
    return loss;
  }
  const torch::Tensor neg_users = device_manager().place(torch::tensor(draws.users, torch::kInt64));
  loss = loss + neg_log_sigmoid(row_dot(user_embedding_.index_select(0, neg_users), pos), false);
  if (order_ == 2) {
    const torch::Tensor ctx_pos = user_context_embedding_.index_select(0, batch.users);
    const torch::Tensor ctx_neg = user_context_embedding_.index_select(0, neg_users);
    loss = loss + second_order_weight_ * (neg_log_sigmoid(row_dot(pos, ctx_pos), true) +
                                          neg_log_sigmoid(row_dot(pos, ctx_neg), false));
  }
  return loss;
}

torch::Tensor LINE::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(user_embedding_.index_select(0, batch.users), item_embedding_.t());
}

torch::Tensor LINE::predict(const data::Batch& batch) {
  return row_dot(user_embedding_.index_select(0, batch.users),
                 item_embedding_.index_select(0, batch.items));
}

void LINE::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "epoch", epoch_);
  layers::write_int(archive, "batch", batch_);
}

void LINE::load_training_state(torch::serialize::InputArchive& archive) {
  epoch_ = layers::read_int(archive, "epoch");
  batch_ = layers::read_int(archive, "batch");
}

RECBOLE_REGISTER_MODEL(LINE) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"LINE",
       "general",
       InputType::kPairwise,
       "Large-scale information network embedding: first- and second-order proximity losses",
       {keys::embedding_size().decl("Dimension of vertex and context tables"),
        Key("order", KeyType::kInt)
            .min(1)
            .max(2)
            .help("1: first-order proximity only; 2: also the context (second-order) losses"),
        Key("second_order_loss_weight", KeyType::kFloat)
            .min(0)
            .help("Weight of the second-order (context) loss terms")},
       [](const ModelContext& ctx) { return std::make_shared<LINE>(ctx); }});
}

}  // namespace recbole::models

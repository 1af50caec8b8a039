#include "models/general/simplex.h"

#include <algorithm>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/layers/dropout.h"
#include "models/layers/graph.h"
#include "models/layers/history.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/row_sums.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {
namespace {

namespace F = torch::nn::functional;

// Users aggregated at once when filling the evaluation cache ([block, L, d] floats).
constexpr int64_t kCacheBlock = 1024;

int64_t negatives_per_positive(const config::Config& config) {
  const YAML::Node neg = config.node("train_neg_sample_args");
  const bool none = !neg || neg.IsNull() || !neg["distribution"] ||
                    neg["distribution"].as<std::string>() == "none";
  if (none)
    throw ConfigError(config.source("train_neg_sample_args") +
                      ": SimpleX: train_neg_sample_args must not be null (its loss contrasts "
                      "each positive with sample_num negatives); expected e.g. "
                      "{distribution: uniform, sample_num: 1}");
  return std::max<int64_t>(1, neg["sample_num"].as<int64_t>());
}

torch::Tensor unit(const torch::Tensor& x) {
  return F::normalize(x, F::NormalizeFuncOptions().dim(-1));
}

}  // namespace

SimpleX::SimpleX(const ModelContext& ctx)
    : CachedFactorModel("SimpleX", ctx),
      sample_num_(negatives_per_positive(ctx.config)),
      margin_(ctx.config.get_double("margin")),
      negative_weight_(ctx.config.get_double("negative_weight")),
      gamma_(ctx.config.get_double("gamma")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      dropout_(keys::dropout_prob().get(ctx.config)),
      require_pow_(ctx.config.get_bool("require_pow")) {
  const std::string aggregator = ctx.config.get_string("aggregator");
  aggregator_ = aggregator == "mean"             ? Aggregator::kMean
                : aggregator == "user_attention" ? Aggregator::kUserAttention
                                                 : Aggregator::kSelfAttention;
  const int64_t d = keys::embedding_size().get(ctx.config);
  // The history subset is drawn once from the run's seed, so a rebuilt model has the same one.
  history_host_ =
      layers::padded_history(ctx.train, ctx.config.get_int("history_len"), ctx.device.base_seed());
  history_ids_ = ctx.device.place(history_host_.ids);
  history_len_ = ctx.device.place(history_host_.lengths);
  user_embedding_ = register_parameter("user_embedding", torch::empty({ctx.n_users, d}));
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  ui_map_ =
      register_module("ui_map", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  if (aggregator_ != Aggregator::kMean) w_k_ = register_module("w_k", torch::nn::Linear(d, d));
  if (aggregator_ == Aggregator::kSelfAttention)
    w_q_ = register_module("w_q", torch::nn::Linear(torch::nn::LinearOptions(d, 1).bias(false)));
  // xavier_normal over the tables and every Linear (biases 0), then the padding row zeroed.
  // Submodules one by one: the model itself is not yet held by a shared_ptr (Module::modules).
  {
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_normal_(user_embedding_);
    torch::nn::init::xavier_normal_(item_embedding_);
    item_embedding_[0].zero_();
  }
  for (const auto& child : children()) layers::initialize(*child, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

torch::Tensor SimpleX::item_rows(const torch::Tensor& ids) const {
  return torch::embedding(item_embedding_, ids, /*padding_idx=*/0);
}

layers::GraphOperator SimpleX::history_mean(const torch::Tensor& users_host) const {
  const int64_t width = history_host_.ids.size(1);
  const int64_t* ids = history_host_.ids.data_ptr<int64_t>();
  const int64_t* lens = history_host_.lengths.data_ptr<int64_t>();
  const int64_t* us = users_host.data_ptr<int64_t>();
  layers::SparseMatrix m;
  m.rows = users_host.size(0);
  m.cols = item_embedding_.size(0);
  m.indptr.reserve(static_cast<size_t>(m.rows + 1));
  for (int64_t k = 0; k < m.rows; ++k) {
    const int64_t* row = ids + us[k] * width;
    const float w = static_cast<float>(1.0 / (static_cast<double>(lens[us[k]]) + 1e-10));
    for (int64_t l = 0; l < lens[us[k]]; ++l) {
      m.indices.push_back(static_cast<int32_t>(row[l]));
      m.values.push_back(w);
    }
    m.indptr.push_back(static_cast<int64_t>(m.indices.size()));
  }
  return layers::GraphOperator(std::move(m), /*symmetric=*/false, device_manager());
}

torch::Tensor SimpleX::aggregate(const torch::Tensor& users, const torch::Tensor& users_host,
                                 const torch::Tensor& user_e, torch::Tensor* hist_sq) {
  if (aggregator_ == Aggregator::kMean) {
    // M·E with M's row k holding 1/(len + 1e-10) at each history item of users[k]: the sparse
    // product's backward is a plain scatter, where an embedding bag's sorts its ids every batch.
    // Pads are left out, so row 0 gets no gradient.
    const layers::GraphOperator mean = history_mean(users_host);
    // Σ_l ‖h_l‖² = (len + 1e-10) · M·‖E‖² (an empty history has no entries: 0).
    if (hist_sq)
      *hist_sq = layers::spmm(mean, item_embedding_.pow(2).sum(1, /*keepdim=*/true)).squeeze(1) *
                 (history_len_.index_select(0, users).to(torch::kFloat32) + 1e-10);
    return layers::spmm(mean, item_embedding_);
  }
  const torch::Tensor history_e = item_rows(history_ids_.index_select(0, users));  // [U, L, d]
  if (hist_sq) *hist_sq = history_e.pow(2).sum({1, 2});
  const torch::Tensor key = torch::tanh(w_k_->forward(history_e));
  const torch::Tensor logits = aggregator_ == Aggregator::kUserAttention
                                   ? torch::matmul(key, user_e.unsqueeze(2)).squeeze(2)
                                   : w_q_->forward(key).squeeze(2);  // [U, L]
  // Pad slots (zero embeddings) get no weight; RecBole exponentiates without a shift.
  const torch::Tensor e = torch::exp(logits) * (history_e.sum(-1) != 0).to(logits.dtype());
  const torch::Tensor w = e / (e.sum(1, /*keepdim=*/true) + 1e-10);
  return torch::matmul(w.unsqueeze(1), history_e).squeeze(1);
}

torch::Tensor SimpleX::mix(const torch::Tensor& user_e, const torch::Tensor& a) {
  return gamma_ * user_e + (1 - gamma_) * ui_map_->forward(a);
}

torch::Tensor SimpleX::calculate_loss(const data::Batch& batch) {
  drop_factors();
  const int64_t rows = batch.users.size(0);
  if (rows % sample_num_ != 0)
    throw Error("SimpleX: a batch of " + std::to_string(rows) + " rows is not " +
                std::to_string(sample_num_) + " tiles of positives");
  const int64_t n = rows / sample_num_;
  const torch::Tensor users = batch.users.narrow(0, 0, n);
  const torch::Tensor user_e = user_embedding_.index_select(0, users);
  const torch::Tensor pos_e = item_rows(batch.items.narrow(0, 0, n));
  // Tile k holds every user's k-th negative: [K, U] → [U, K].
  const torch::Tensor neg_e = item_rows(batch.neg_items.view({sample_num_, n}).t());
  // A batch repeats its users: aggregate each distinct user once, gather back to the rows.
  const auto [distinct_host, inverse] = layers::distinct_ids(users, device_manager());
  const torch::Tensor distinct = distinct_host.to(users.device());
  torch::Tensor hist_sq;
  const torch::Tensor a =
      aggregate(distinct, distinct_host, user_embedding_.index_select(0, distinct), &hist_sq)
          .index_select(0, inverse);
  const torch::Tensor v = layers::dropout(mix(user_e, a), dropout_, is_training());
  const torch::Tensor vn = unit(v).unsqueeze(1);                       // [U, 1, d]
  const torch::Tensor pos_cos = (vn.squeeze(1) * unit(pos_e)).sum(1);  // [U]
  // A broadcast product, not a batched GEMM: bmm runs U tiny [1, d] × [d, K] products.
  const torch::Tensor neg_cos = (vn * unit(neg_e)).sum(-1);  // [U, K]
  const torch::Tensor ccl =
      (torch::relu(1 - pos_cos) + negative_weight_ * torch::relu(neg_cos - margin_).mean(1)).mean();
  // EmbLoss(e_u, e⁺, H, E⁻) with H the rows' [U, L, d] histories: ‖H‖² is the sum over the
  // rows of their users' Σ_l ‖h_l‖².
  const torch::Tensor h_sq = hist_sq.index_select(0, inverse).sum();
  torch::Tensor reg;
  if (require_pow_)
    reg = (user_e.pow(2).sum() + pos_e.pow(2).sum() + h_sq + neg_e.pow(2).sum()) / n / 2;
  else
    reg = (user_e.norm() + pos_e.norm() + h_sq.sqrt() + neg_e.norm()) / n;
  return ccl + reg_weight_ * reg;
}

std::pair<torch::Tensor, torch::Tensor> SimpleX::evaluation_factors() {
  std::vector<torch::Tensor> blocks;
  for (int64_t u0 = 0; u0 < n_users(); u0 += kCacheBlock) {
    const torch::Tensor users =
        torch::arange(u0, std::min(n_users(), u0 + kCacheBlock), history_ids_.options());
    const torch::Tensor user_e = user_embedding_.index_select(0, users);
    blocks.push_back(
        unit(mix(user_e, aggregate(users, DeviceManager::to_host(users), user_e, nullptr))));
  }
  return {torch::cat(blocks), unit(item_embedding_)};
}

RECBOLE_REGISTER_MODEL(SimpleX) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"SimpleX",
       "general",
       InputType::kPairwise,
       "Cosine contrastive loss over a user vector mixed with its aggregated history",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("margin", KeyType::kFloat)
            .min(-1)
            .max(1)
            .help("Cosine below which a negative costs "
                  "nothing"),
        Key("negative_weight", KeyType::kFloat).min(0).help("Weight of the negatives' mean loss"),
        Key("gamma", KeyType::kFloat)
            .min(0)
            .max(1)
            .help("Share of the user's own embedding in "
                  "its vector"),
        Key("aggregator", KeyType::kString)
            .choices({"mean", "user_attention", "self_attention"})
            .help("How the history embeddings are combined"),
        Key("history_len", KeyType::kInt)
            .min(1)
            .help("Most history items kept per user (a "
                  "random subset)"),
        keys::reg_weight().decl("Weight of the EmbLoss regulariser"),
        keys::dropout_prob().decl("Dropout on the user vector, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<SimpleX>(ctx); }});
}

}  // namespace recbole::models

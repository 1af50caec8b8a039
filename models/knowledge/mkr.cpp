#include "models/knowledge/mkr.h"

#include "models/layers/init.h"
#include "models/layers/knowledge.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace F = torch::nn::functional;

MKR::MKR(const ModelContext& ctx)
    : Model("MKR", ctx),
      kge_interval_(ctx.config.get_int("kge_interval")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      inner_product_(ctx.config.get_bool("use_inner_product")) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t low = ctx.config.get_int("low_layers_num");
  const int64_t high = ctx.config.get_int("high_layers_num");
  const double dropout = keys::dropout_prob().get(ctx.config);
  // On the CPU until to() below, where layers::initialize(*this) draws every table again, so
  // that a seed gives the same weights on every device.
  const auto table = [&](const char* name, int64_t rows) {
    return register_parameter(name, layers::new_table(rows, d, layers::Init::kXavierNormal));
  };
  user_embedding_ = table("user_embedding", ctx.n_users);
  item_embedding_ = table("item_embedding", g.n_entities());
  entity_embedding_ = table("entity_embedding", g.n_entities());
  relation_embedding_ = table("relation_embedding", g.n_relations());
  for (int64_t l = 0; l < low; ++l) {
    const std::string p = "cc_unit" + std::to_string(l) + "_";
    CrossUnit u;
    const auto weight = [&](const char* name) {
      return register_module(p + name,
                             torch::nn::Linear(torch::nn::LinearOptions(d, 1).bias(false)));
    };
    const auto bias = [&](const char* name) {
      return register_parameter(p + name, torch::zeros({1}));
    };
    u.vv = weight("weight_vv"), u.ev = weight("weight_ev");
    u.ve = weight("weight_ve"), u.ee = weight("weight_ee");
    u.b_vv = bias("bias_vv"), u.b_ev = bias("bias_ev");
    u.b_ve = bias("bias_ve"), u.b_ee = bias("bias_ee");
    units_.push_back(u);
  }
  const std::vector<int64_t> low_sizes(static_cast<size_t>(low) + 1, d);
  const std::vector<int64_t> high_sizes(static_cast<size_t>(high), 2 * d);
  user_mlp_ = register_module("user_mlp", layers::MLP(low_sizes, dropout, "sigmoid"));
  tail_mlp_ = register_module("tail_mlp", layers::MLP(low_sizes, dropout, "sigmoid"));
  kge_mlp_ = register_module("kge_mlp", layers::MLP(high_sizes, dropout, "sigmoid"));
  kge_pred_ = register_module("kge_pred_mlp", torch::nn::Linear(2 * d, d));
  if (!inner_product_) {
    rs_mlp_ = register_module("rs_mlp", layers::MLP(high_sizes, dropout, "sigmoid"));
    rs_pred_ = register_module("rs_pred_mlp", torch::nn::Linear(2 * d, 1));
  }
  layers::initialize(*this, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

std::pair<torch::Tensor, torch::Tensor> MKR::cross_compress(torch::Tensor v, torch::Tensor e) {
  // v eᵀ w = v (eᵀw): the outer product times a weight vector, without the [N, d, d] product.
  for (CrossUnit& u : units_) {
    torch::Tensor v_next = v * u.vv->forward(e) + e * u.ev->forward(v) + u.b_vv + u.b_ev;
    torch::Tensor e_next = v * u.ve->forward(e) + e * u.ee->forward(v) + u.b_ve + u.b_ee;
    v = std::move(v_next);
    e = std::move(e_next);
  }
  return {v, e};
}

torch::Tensor MKR::pair_scores(const torch::Tensor& users, const torch::Tensor& items) {
  if (inner_product_) return (users * items).sum(1);
  return torch::sigmoid(rs_pred_->forward(rs_mlp_->forward(torch::cat({users, items}, 1))))
      .squeeze(1);
}

PassBatches MKR::pass_batches(int64_t epoch, int64_t pass) const {
  if (pass == 0) return PassBatches::kMain;
  return epoch % kge_interval_ == 0 ? PassBatches::kAuxiliary : PassBatches::kSkip;
}

torch::Tensor MKR::calculate_loss(const data::Batch& batch) {
  if (!batch.users.defined()) return kg_loss(batch);
  const torch::Tensor u = user_mlp_->forward(user_embedding_.index_select(0, batch.users));
  const torch::Tensor v = cross_compress(item_embedding_.index_select(0, batch.items),
                                         entity_embedding_.index_select(0, batch.items))
                              .first;
  const torch::Tensor bce =
      F::binary_cross_entropy_with_logits(pair_scores(u, v), batch.labels.to(torch::kFloat32));
  return bce + reg_weight_ * (u.pow(2).sum() + v.pow(2).sum()) / 2;
}

torch::Tensor MKR::kg_loss(const data::Batch& batch) {
  const torch::Tensor h =
      cross_compress(item_embedding_.index_select(0, batch.column(layers::kKgHeads)),
                     entity_embedding_.index_select(0, batch.column(layers::kKgHeads)))
          .second;
  const torch::Tensor t =
      tail_mlp_->forward(entity_embedding_.index_select(0, batch.column(layers::kKgTails)));
  const torch::Tensor r = relation_embedding_.index_select(0, batch.column(layers::kKgRelations));
  const torch::Tensor t_hat =
      torch::sigmoid(kge_pred_->forward(kge_mlp_->forward(torch::cat({h, r}, 1))));
  const torch::Tensor score = torch::sigmoid((t * t_hat).sum(1));
  const auto rows = static_cast<double>(batch.column(layers::kKgHeads).size(0));
  return -score.sum() + rows * reg_weight_ * (h.pow(2).sum() + t.pow(2).sum()) / 2;
}

torch::Tensor MKR::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor u = user_mlp_->forward(user_embedding_.index_select(0, batch.users));
  const torch::Tensor v = cross_compress(item_embedding_.narrow(0, 0, n_items()),
                                         entity_embedding_.narrow(0, 0, n_items()))
                              .first;
  if (inner_product_) return torch::matmul(u, v.t());
  // Every (user, item) pair through the MLP, a user at a time.
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < u.size(0); ++b)
    rows.push_back(pair_scores(u[b].unsqueeze(0).expand({n_items(), -1}), v));
  return torch::stack(rows);
}

torch::Tensor MKR::predict(const data::Batch& batch) {
  const torch::Tensor u = user_mlp_->forward(user_embedding_.index_select(0, batch.users));
  const torch::Tensor v = cross_compress(item_embedding_.index_select(0, batch.items),
                                         entity_embedding_.index_select(0, batch.items))
                              .first;
  return pair_scores(u, v);
}

RECBOLE_REGISTER_MODEL(MKR) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"MKR",
       "knowledge",
       InputType::kPointwise,
       "Multi-task recommendation and KG embedding linked by cross & compress units",
       {keys::embedding_size().decl("Dimension of every table"),
        Key("kg_embedding_size", KeyType::kInt)
            .min(1)
            .help("Accepted and unused: every table is embedding_size wide (as RecBole)"),
        Key("low_layers_num", KeyType::kInt)
            .min(1)
            .help("Cross & compress units, and layers of the user and tail MLPs"),
        Key("high_layers_num", KeyType::kInt)
            .min(1)
            .help("Layers of the KG (and non-inner-product) prediction MLPs, the last included"),
        keys::reg_weight().decl("Weight of the squared-norm regularisers"),
        Key("use_inner_product", KeyType::kBool)
            .help("Score ⟨user, item⟩; false: an MLP over [user ‖ item]"),
        Key("kge_interval", KeyType::kInt)
            .min(1)
            .help("A KG pass after the recommendation pass in epochs 0, k, 2k, …"),
        keys::dropout_prob().decl("Dropout before each MLP layer")},
       [](const ModelContext& ctx) { return std::make_shared<MKR>(ctx); }});
}

}  // namespace recbole::models

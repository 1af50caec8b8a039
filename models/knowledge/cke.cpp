#include "models/knowledge/cke.h"

#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace F = torch::nn::functional;

CKE::CKE(const ModelContext& ctx) : Model("CKE", ctx) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  const int64_t d = keys::embedding_size().get(ctx.config);
  kg_size_ = ctx.config.get_int("kg_embedding_size");
  const std::vector<double> reg =
      layers::weight_list(ctx.config, "CKE", "reg_weights", {"recommendation", "knowledge graph"});
  reg_rec_ = reg[0];
  reg_kg_ = reg[1];
  const auto table = [&](const char* name, int64_t rows, int64_t cols) {
    return register_table(name, rows, cols, layers::Init::kXavierNormal);
  };
  user_embedding_ = table("user_embedding", ctx.n_users, d);
  item_embedding_ = table("item_embedding", ctx.n_items, d);
  entity_embedding_ = table("entity_embedding", g.n_entities(), d);
  relation_embedding_ = table("relation_embedding", g.n_relations(), kg_size_);
  trans_w_ = table("trans_w", g.n_relations(), d * kg_size_);
}

torch::Tensor CKE::item_vectors() const {
  return item_embedding_ + entity_embedding_.narrow(0, 0, n_items());
}

torch::Tensor CKE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  auto item = [&](const torch::Tensor& ids) {
    return item_embedding_.index_select(0, ids) + entity_embedding_.index_select(0, ids);
  };
  const torch::Tensor pos = item(batch.items), neg = item(batch.neg_items);
  const torch::Tensor rec = layers::bpr_loss((u * pos).sum(1), (u * neg).sum(1));

  // The three entity columns projected together, each row by its triple's relation.
  const int64_t b = batch.column(layers::kKgHeads).size(0);
  const torch::Tensor ents =
      torch::cat({batch.column(layers::kKgHeads), batch.column(layers::kKgTails),
                  batch.column(layers::kKgNegTails)});
  const torch::Tensor projected =
      F::normalize(layers::transr_project(entity_embedding_.index_select(0, ents), trans_w_,
                                          batch.column(layers::kKgRelations).repeat({3}), kg_size_),
                   F::NormalizeFuncOptions().dim(1));
  const torch::Tensor h = projected.narrow(0, 0, b), t_pos = projected.narrow(0, b, b),
                      t_neg = projected.narrow(0, 2 * b, b);
  const torch::Tensor r =
      F::normalize(relation_embedding_.index_select(0, batch.column(layers::kKgRelations)),
                   F::NormalizeFuncOptions().dim(1));
  const torch::Tensor d_pos = (h + r - t_pos).pow(2).sum(1);
  const torch::Tensor d_neg = (h + r - t_neg).pow(2).sum(1);
  const torch::Tensor kg = layers::bpr_loss(d_neg, d_pos);

  const torch::Tensor reg =
      reg_rec_ * layers::emb_loss({u, pos, neg}) + reg_kg_ * layers::emb_loss({h, r, t_pos, t_neg});
  return rec + kg + reg;
}

torch::Tensor CKE::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(user_embedding_.index_select(0, batch.users), item_vectors().t());
}

torch::Tensor CKE::predict(const data::Batch& batch) {
  const torch::Tensor v =
      item_embedding_.index_select(0, batch.items) + entity_embedding_.index_select(0, batch.items);
  return (user_embedding_.index_select(0, batch.users) * v).sum(1);
}

bool CKE::score_factors(torch::Tensor* users, torch::Tensor* items) const {
  *users = user_embedding_;
  *items = item_vectors();
  return true;
}

RECBOLE_REGISTER_MODEL(CKE) {
  using config::Key;
  using config::KeyType;
  ModelDescriptor d{
      "CKE",
      "knowledge",
      InputType::kPairwise,
      "Collaborative knowledge embedding: BPR on item + entity vectors, TransR on the KG",
      {keys::embedding_size().decl("Dimension of user, item, entity rows"),
       Key("kg_embedding_size", KeyType::kInt).min(1).help("Dimension of relation rows (TransR)"),
       Key("reg_weights", KeyType::kFloatList)
           .min(0)
           .help("[recommendation, knowledge graph] weights of the EmbLoss regularisers")},
      [](const ModelContext& ctx) { return std::make_shared<CKE>(ctx); }};
  d.auxiliary_batches = true;
  register_model(std::move(d));
}

}  // namespace recbole::models

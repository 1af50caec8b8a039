#include "models/knowledge/cfkg.h"

#include "models/layers/init.h"
#include "models/layers/knowledge.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace F = torch::nn::functional;

CFKG::CFKG(const ModelContext& ctx)
    : Model("CFKG", ctx),
      transe_(ctx.config.get_string("loss_function") == "transe"),
      margin_(ctx.config.get_double("margin")) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  const int64_t d = keys::embedding_size().get(ctx.config);
  const auto table = [&](const char* name, int64_t rows) {
    return register_table(name, rows, d, layers::Init::kXavierNormal);
  };
  user_embedding_ = table("user_embedding", ctx.n_users);
  entity_embedding_ = table("entity_embedding", g.n_entities());
  buy_ = g.n_relations();
  relation_embedding_ = table("relation_embedding", g.n_relations() + 1);
}

torch::Tensor CFKG::anchors(const torch::Tensor& users) const {
  return user_embedding_.index_select(0, users) + relation_embedding_[buy_];
}

torch::Tensor CFKG::calculate_loss(const data::Batch& batch) {
  const torch::Tensor a =
      torch::cat({anchors(batch.users),
                  entity_embedding_.index_select(0, batch.column(layers::kKgHeads)) +
                      relation_embedding_.index_select(0, batch.column(layers::kKgRelations))});
  const torch::Tensor p =
      entity_embedding_.index_select(0, torch::cat({batch.items, batch.column(layers::kKgTails)}));
  const torch::Tensor n = entity_embedding_.index_select(
      0, torch::cat({batch.neg_items, batch.column(layers::kKgNegTails)}));
  if (transe_)
    return F::triplet_margin_loss(a, p, n, F::TripletMarginLossFuncOptions().margin(margin_));
  return (F::softplus(-(a * p).sum(1)) + F::softplus((a * n).sum(1))).mean();
}

torch::Tensor CFKG::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor a = anchors(batch.users);
  const torch::Tensor items = entity_embedding_.narrow(0, 0, n_items());
  // Differences, not the ‖a‖² + ‖t‖² − 2⟨a, t⟩ expansion (compute mode 2): the scores equal
  // predict's.
  if (transe_) return -torch::cdist(a, items, 2.0, 2);
  return torch::matmul(a, items.t());
}

torch::Tensor CFKG::predict(const data::Batch& batch) {
  const torch::Tensor a = anchors(batch.users);
  const torch::Tensor t = entity_embedding_.index_select(0, batch.items);
  if (transe_) return -(a - t).norm(2, 1);
  return (a * t).sum(1);
}

bool CFKG::score_factors(torch::Tensor* users, torch::Tensor* items) const {
  if (transe_) return false;
  *users = user_embedding_ + relation_embedding_[buy_];
  *items = entity_embedding_.narrow(0, 0, n_items());
  return true;
}

RECBOLE_REGISTER_MODEL(CFKG) {
  using config::Key;
  using config::KeyType;
  ModelDescriptor d{
      "CFKG",
      "knowledge",
      InputType::kPairwise,
      "Collaborative filtering on a knowledge graph: purchases as one more relation",
      {keys::embedding_size().decl("Dimension of every table"),
       Key("loss_function", KeyType::kString)
           .choices({"inner_product", "transe"})
           .help("Score ⟨h + r, t⟩ with a softplus loss, or −‖h + r − t‖ with a margin loss"),
       Key("margin", KeyType::kFloat).min(0).help("Margin of the transe loss")},
      [](const ModelContext& ctx) { return std::make_shared<CFKG>(ctx); }};
  d.auxiliary_batches = true;
  register_model(std::move(d));
}

}  // namespace recbole::models

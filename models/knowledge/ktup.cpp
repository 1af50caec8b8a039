#include "models/knowledge/ktup.h"

#include "models/layers/init.h"
#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

namespace F = torch::nn::functional;

namespace {

// x − (x·n) n, row by row ([..., d]).
torch::Tensor transh_project(const torch::Tensor& x, const torch::Tensor& n) {
  return x - (x * n).sum(-1, true) * n;
}

// Σ_rows (p·n)² / ‖p‖²: how far each normal is from orthogonal to its translation.
torch::Tensor orthogonal_loss(const torch::Tensor& p, const torch::Tensor& n) {
  return ((p * n).sum(1).pow(2) / p.pow(2).sum(1)).sum();
}

// RecBole's EmbMarginLoss: Σ_j Σ_rows max(‖row‖² − 1, 0).
torch::Tensor emb_margin_loss(const std::vector<torch::Tensor>& xs) {
  torch::Tensor sum = torch::zeros({}, xs.front().options());
  for (const torch::Tensor& x : xs) sum = sum + torch::relu(x.pow(2).sum(1) - 1).sum();
  return sum;
}

// −log(−log(ξ + 1e−20) + 1e−20): Gumbel noise from uniforms ξ in [0, 1).
torch::Tensor gumbel(const torch::Tensor& xi) {
  return -torch::log(-torch::log(xi + 1e-20) + 1e-20);
}

}  // namespace

torch::Tensor KTUP::evaluation_uniforms(const torch::Tensor& users, const torch::Tensor& items,
                                        int64_t n) const {
  const torch::Tensor u = DeviceManager::to_host(users).contiguous();
  const torch::Tensor i = DeviceManager::to_host(items).contiguous();
  torch::Tensor xi = torch::empty({u.numel(), n}, torch::kFloat32);
  const int64_t* up = u.data_ptr<int64_t>();
  const int64_t* ip = i.data_ptr<int64_t>();
  float* out = xi.data_ptr<float>();
  for (int64_t row = 0; row < u.numel(); ++row) {
    uint64_t state = splitmix64_hash(seed_ ^ splitmix64_hash(static_cast<uint64_t>(up[row]) << 32 |
                                                             static_cast<uint64_t>(ip[row])));
    for (int64_t k = 0; k < n; ++k)  // 24 random bits: every float in [0, 1) that step allows
      out[row * n + k] = static_cast<float>(splitmix64_next(state) >> 40) * 0x1p-24f;
  }
  return xi.to(users.device());
}

KTUP::KTUP(const ModelContext& ctx)
    : Model("KTUP", ctx),
      gumbel_(ctx.config.get_bool("use_st_gumbel")),
      l1_(ctx.config.get_bool("L1_flag")),
      margin_(ctx.config.get_double("margin")),
      kg_weight_(ctx.config.get_double("kg_weight")),
      align_weight_(ctx.config.get_double("align_weight")),
      seed_(splitmix64_hash(static_cast<uint64_t>(ctx.config.get_int("seed")))) {
  if (!ctx.config.is_null("train_rec_step") && !ctx.config.is_null("train_kg_step")) {
    rec_step_ = ctx.config.get_int("train_rec_step");
    kg_step_ = ctx.config.get_int("train_kg_step");
  }
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  const int64_t d = keys::embedding_size().get(ctx.config);
  const auto table = [&](const char* name, int64_t rows, bool normalised) {
    torch::Tensor t = layers::new_table(rows, d, layers::Init::kXavierUniform);
    if (normalised) t = F::normalize(t, F::NormalizeFuncOptions().dim(1));
    return register_parameter(name, ctx.device.place(t));
  };
  user_embedding_ = table("user_embedding", ctx.n_users, true);
  item_embedding_ = table("item_embedding", ctx.n_items, false);
  pref_embedding_ = table("pref_embedding", g.n_relations(), true);
  pref_norm_embedding_ = table("pref_norm_embedding", g.n_relations(), true);
  entity_embedding_ = table("entity_embedding", g.n_entities(), true);
  relation_embedding_ = table("relation_embedding", g.n_relations(), true);
  relation_norm_embedding_ = table("relation_norm_embedding", g.n_relations(), true);
}

PassBatches KTUP::pass_batches(int64_t epoch, int64_t pass) const {
  (void)pass;
  if (rec_step_ + kg_step_ == 0) return PassBatches::kMain;
  return epoch % (rec_step_ + kg_step_) < rec_step_ ? PassBatches::kMain : PassBatches::kAuxiliary;
}

torch::Tensor KTUP::item_vectors(const torch::Tensor& ids) const {
  return item_embedding_.index_select(0, ids) + entity_embedding_.index_select(0, ids);
}

torch::Tensor KTUP::distance(const torch::Tensor& x) const {
  return l1_ ? x.abs().sum(-1) : x.pow(2).sum(-1);
}

torch::Tensor KTUP::score(const torch::Tensor& users, const torch::Tensor& items,
                          const torch::Tensor& u, const torch::Tensor& v) {
  const torch::Tensor translations = (pref_embedding_ + relation_embedding_) / 2;  // [R, d]
  const torch::Tensor normals = (pref_norm_embedding_ + relation_norm_embedding_) / 2;
  const torch::Tensor z = torch::matmul(u + v, translations.t());  // (u + v)(P + Q)ᵀ / 2
  torch::Tensor w = z;
  if (gumbel_) {
    const torch::Tensor xi =
        is_training() ? torch::rand_like(z) : evaluation_uniforms(users, items, z.size(-1));
    const torch::Tensor soft = torch::softmax(z + gumbel(xi), -1);
    const torch::Tensor hard = F::one_hot(soft.argmax(-1), z.size(-1)).to(soft.dtype());
    w = hard - soft.detach() + soft;
  }
  const torch::Tensor r = torch::matmul(w, translations);
  const torch::Tensor n = torch::matmul(w, normals);
  return -distance(transh_project(u, n) + r - transh_project(v, n));
}

torch::Tensor KTUP::align_loss(const torch::Tensor& ids) const {
  return (item_embedding_.index_select(0, ids) - entity_embedding_.index_select(0, ids))
      .pow(2)
      .sum(1)
      .mean();
}

torch::Tensor KTUP::calculate_loss(const data::Batch& batch) {
  if (!batch.users.defined()) return kg_loss(batch);
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  const torch::Tensor pos = score(batch.users, batch.items, u, item_vectors(batch.items));
  const torch::Tensor neg = score(batch.users, batch.neg_items, u, item_vectors(batch.neg_items));
  return layers::bpr_loss(pos, neg) + orthogonal_loss(pref_embedding_, pref_norm_embedding_) +
         align_weight_ * align_loss(torch::cat({batch.items, batch.neg_items}));
}

torch::Tensor KTUP::kg_loss(const data::Batch& batch) {
  const torch::Tensor h = entity_embedding_.index_select(0, batch.column(layers::kKgHeads));
  const torch::Tensor t_pos = entity_embedding_.index_select(0, batch.column(layers::kKgTails));
  const torch::Tensor t_neg = entity_embedding_.index_select(0, batch.column(layers::kKgNegTails));
  const torch::Tensor r = relation_embedding_.index_select(0, batch.column(layers::kKgRelations));
  const torch::Tensor n =
      relation_norm_embedding_.index_select(0, batch.column(layers::kKgRelations));
  const torch::Tensor h_p = transh_project(h, n);
  const torch::Tensor pos = -distance(h_p + r - transh_project(t_pos, n));
  const torch::Tensor neg = -distance(h_p + r - transh_project(t_neg, n));
  const torch::Tensor ranking = torch::relu(margin_ - (pos - neg)).mean();
  torch::Tensor loss =
      kg_weight_ * (ranking + orthogonal_loss(r, n) + emb_margin_loss({h, t_pos, t_neg, r}));
  const torch::Tensor ids =
      torch::cat({batch.column(layers::kKgHeads), batch.column(layers::kKgTails),
                  batch.column(layers::kKgNegTails)});
  const torch::Tensor items = ids.masked_select(ids < n_items());
  if (items.numel() > 0) loss = loss + align_weight_ * align_loss(items);
  return loss;
}

torch::Tensor KTUP::sampled_scores(const torch::Tensor& users, const torch::Tensor& items,
                                   const torch::Tensor& u, const torch::Tensor& v,
                                   const torch::Tensor& z) const {
  const torch::Tensor k =
      (z + gumbel(evaluation_uniforms(users, items, z.size(-1)))).argmax(-1).view({-1});
  const torch::Tensor r = ((pref_embedding_ + relation_embedding_) / 2).index_select(0, k);
  const torch::Tensor n =
      ((pref_norm_embedding_ + relation_norm_embedding_) / 2).index_select(0, k);
  // u⊥ − v⊥ = (u − v)⊥: the projection is linear.
  return -distance(transh_project(u - v, n) + r);
}

torch::Tensor KTUP::full_sort_predict(const data::Batch& batch) {
  const int64_t n = n_items();
  const torch::Tensor ids = torch::arange(n, batch.users.options());
  const torch::Tensor items = item_vectors(ids);
  const int64_t b = batch.users.size(0);
  if (is_training() || !gumbel_) {
    // Every pair through score(), a user at a time.
    std::vector<torch::Tensor> rows;
    for (int64_t r = 0; r < b; ++r)
      rows.push_back(score(batch.users[r].expand_as(ids), ids,
                           user_embedding_[batch.users[r]].expand_as(items), items));
    return torch::stack(rows);
  }
  // Evaluation with noise: the noise is keyed by the pair, so blocks of users run in parallel
  // and give what predict gives.
  const torch::Tensor translations = (pref_embedding_ + relation_embedding_) / 2;
  const torch::Tensor item_logits = torch::matmul(items, translations.t());  // [n, R]
  const torch::Tensor users = user_embedding_.index_select(0, batch.users);
  const torch::Tensor user_logits = torch::matmul(users, translations.t());  // [b, R]
  torch::Tensor out = torch::empty({b, n}, items.options());
  constexpr int64_t kBlock = 8;
  layers::run_chunks((b + kBlock - 1) / kBlock, out.is_cuda(), [&](int64_t t) {
    const int64_t b0 = t * kBlock, m = std::min(kBlock, b - b0);
    const torch::Tensor z = user_logits.narrow(0, b0, m).unsqueeze(1) + item_logits.unsqueeze(0);
    const torch::Tensor u = users.narrow(0, b0, m).unsqueeze(1).expand({m, n, -1});
    const torch::Tensor v = items.unsqueeze(0).expand({m, n, -1});
    out.narrow(0, b0, m).copy_(sampled_scores(batch.users.narrow(0, b0, m).repeat_interleave(n),
                                              ids.repeat({m}), u.reshape({m * n, -1}),
                                              v.reshape({m * n, -1}), z.reshape({m * n, -1}))
                                   .view({m, n}));
  });
  return out;
}

torch::Tensor KTUP::predict(const data::Batch& batch) {
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  const torch::Tensor v = item_vectors(batch.items);
  if (is_training() || !gumbel_) return score(batch.users, batch.items, u, v);
  const torch::Tensor translations = (pref_embedding_ + relation_embedding_) / 2;
  return sampled_scores(batch.users, batch.items, u, v,
                        torch::matmul(u, translations.t()) + torch::matmul(v, translations.t()));
}

RECBOLE_REGISTER_MODEL(KTUP) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"KTUP",
       "knowledge",
       InputType::kPairwise,
       "Translation-based user preferences (TransH) learnt jointly with the knowledge graph",
       {Key("train_rec_step", KeyType::kInt)
            .min(1)
            .null()
            .help("Recommendation epochs in each block (null, or train_kg_step null: "
                  "recommendation epochs only)"),
        Key("train_kg_step", KeyType::kInt).min(1).null().help("KG epochs in each block"),
        keys::embedding_size().decl("Dimension of every table"),
        Key("use_st_gumbel", KeyType::kBool)
            .help("Pick one preference by straight-through Gumbel softmax; false: weight them "
                  "by their raw logits"),
        Key("L1_flag", KeyType::kBool).help("Score by the L1 distance instead of squared L2"),
        Key("margin", KeyType::kFloat).min(0).help("Margin of the KG ranking loss"),
        Key("kg_weight", KeyType::kFloat).min(0).help("Weight of the KG losses"),
        Key("align_weight", KeyType::kFloat)
            .min(0)
            .help("Weight of the distance between an item's item and entity rows")},
       [](const ModelContext& ctx) { return std::make_shared<KTUP>(ctx); }});
}

}  // namespace recbole::models

#include "models/knowledge/kgin.h"

#include <limits>

#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

namespace F = torch::nn::functional;

namespace {

// Distance correlation of two samples x, y [R] (see kgin_independence).
torch::Tensor distance_correlation(const torch::Tensor& x, const torch::Tensor& y) {
  const auto centred = [](const torch::Tensor& v) {
    const torch::Tensor c = v.view({-1, 1});
    const torch::Tensor sq = c * c;
    const torch::Tensor d = (sq - 2 * c.mm(c.t()) + sq.t()).clamp_min(0.0).add(1e-8).sqrt();
    return d - d.mean(0, true) - d.mean(1, true) + d.mean();
  };
  const torch::Tensor a = centred(x), b = centred(y);
  const auto dcov = [](const torch::Tensor& p, const torch::Tensor& q) {
    return (p * q).mean().clamp_min(0.0).add(1e-8).sqrt();
  };
  return dcov(a, b) / (dcov(a, a) * dcov(b, b) + 1e-8).sqrt();
}

}  // namespace

torch::Tensor kgin_independence(const torch::Tensor& att, const std::string& mode,
                                double temperature) {
  const int64_t f = att.size(0);
  if (mode == "mi") {
    const torch::Tensor n = F::normalize(att, F::NormalizeFuncOptions().dim(1));
    const torch::Tensor scores = n.mm(n.t()) / temperature;
    return -torch::log_softmax(scores, 1).diagonal().sum();
  }
  torch::Tensor loss = torch::zeros({}, att.options());
  if (mode == "cosine") {
    const torch::Tensor n = F::normalize(att, F::NormalizeFuncOptions().dim(1));
    for (int64_t i = 0; i < f; ++i)
      for (int64_t j = i + 1; j < f; ++j) loss = loss + (n[i] * n[j]).sum().pow(2);
    return loss;
  }
  if (mode == "distance") {
    for (int64_t i = 0; i < f; ++i)
      for (int64_t j = i + 1; j < f; ++j) loss = loss + distance_correlation(att[i], att[j]);
    return loss;
  }
  throw Error("KGIN: ind: expected cosine, distance or mi, got \"" + mode + "\"");
}

KGIN::KGIN(const ModelContext& ctx)
    : CachedFactorModel("KGIN", ctx),
      hops_(ctx.config.get_int("context_hops")),
      node_rate_(ctx.config.get_double("node_dropout_rate")),
      mess_rate_(ctx.config.get_double("mess_dropout_rate")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      sim_regularity_(ctx.config.get_double("sim_regularity")),
      temperature_(ctx.config.get_double("temperature")),
      ind_(ctx.config.get_string("ind")) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  n_entities_ = g.n_entities();
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t n_factors = ctx.config.get_int("n_factors");
  const auto table = [&](const char* name, int64_t rows, int64_t cols) {
    return register_table(name, rows, cols, layers::Init::kXavierUniform);
  };
  user_embedding_ = table("user_embedding", ctx.n_users, d);
  entity_embedding_ = table("entity_embedding", n_entities_, d);
  latent_embedding_ = table("latent_embedding", n_factors, d);
  relation_embedding_ = table("relation_embedding", g.n_relations(), d);
  // A bare parameter in RecBole, given its own xavier_uniform (same bound: √(6 / (F + R))).
  disen_att_ = table("disen_weight_att", n_factors, g.n_relations());
  edge_seed_ = register_buffer(
      "edge_seed",
      ctx.device.place(torch::randint(0, std::numeric_limits<int64_t>::max(), {1}, torch::kInt64)));
  inter_ = layers::user_item_mean_matrix(ctx.train, n_entities_);
  inter_op_ = layers::GraphOperator(inter_, /*symmetric=*/false, ctx.device);
  edges_ = layers::kg_edge_list(g, ctx.device);
}

void KGIN::load(torch::serialize::InputArchive& archive) {
  Model::load(archive);
  drop_factors();
}

uint64_t KGIN::evaluation_seed() const {
  // Not the training forward's own sample: a stream derived from its seed.
  return static_cast<uint64_t>(DeviceManager::to_host(edge_seed_).item<int64_t>()) ^
         0x6576616c75617465ULL;
}

std::pair<torch::Tensor, torch::Tensor> KGIN::propagate(uint64_t seed) {
  const DeviceManager& dm = device_manager();
  const layers::KgEdges edges =
      node_rate_ > 0
          ? edges_.index_select(dm.place(layers::sample_edges(edges_.size(), node_rate_, seed)))
          : edges_;
  const layers::GraphOperator inter =
      is_training() && mess_rate_ > 0
          ? layers::GraphOperator(layers::sparse_dropout(inter_, mess_rate_), false, dm)
          : inter_op_;
  const torch::Tensor relations = relation_embedding_.index_select(0, edges.relations);
  // The intents as relation mixtures: [F, d].
  const torch::Tensor intents = torch::softmax(disen_att_, 1).mm(relation_embedding_);
  torch::Tensor e = entity_embedding_, u = user_embedding_;
  torch::Tensor e_sum = e, u_sum = u;
  for (int64_t hop = 0; hop < hops_; ++hop) {
    torch::Tensor e_next =
        layers::scatter_mean(e.index_select(0, edges.tails) * relations, edges.heads, n_entities_);
    const torch::Tensor m = layers::spmm(inter, e);
    const torch::Tensor beta = torch::softmax(u.mm(latent_embedding_.t()), 1);
    torch::Tensor u_next = beta.mm(intents) * m + m;
    if (mess_rate_ > 0 && is_training()) {
      e_next = layers::dropout(e_next, mess_rate_, true);
      u_next = layers::dropout(u_next, mess_rate_, true);
    }
    e = F::normalize(e_next, F::NormalizeFuncOptions().dim(1));
    u = F::normalize(u_next, F::NormalizeFuncOptions().dim(1));
    e_sum = e_sum + e;
    u_sum = u_sum + u;
  }
  return {u_sum, e_sum};
}

std::pair<torch::Tensor, torch::Tensor> KGIN::evaluation_factors() {
  const auto [users, entities] = propagate(evaluation_seed());
  return {users, entities.narrow(0, 0, n_items())};
}

torch::Tensor KGIN::calculate_loss(const data::Batch& batch) {
  drop_factors();
  // The forward's sample seed, from the seeded generator; kept for the next evaluation.
  const int64_t seed =
      torch::randint(0, std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>();
  {
    torch::NoGradGuard no_grad;
    edge_seed_.fill_(seed);
  }
  const auto [users, entities] = propagate(static_cast<uint64_t>(seed));
  const torch::Tensor u = users.index_select(0, batch.users);
  const torch::Tensor pos = entities.index_select(0, batch.items);
  const torch::Tensor neg = entities.index_select(0, batch.neg_items);
  return layers::bpr_loss((u * pos).sum(1), (u * neg).sum(1)) +
         reg_weight_ * layers::emb_loss({u, pos, neg}) +
         sim_regularity_ * kgin_independence(disen_att_, ind_, temperature_);
}

RECBOLE_REGISTER_MODEL(KGIN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"KGIN",
       "knowledge",
       InputType::kPairwise,
       "Knowledge graph-based intent network: user intents over relations, relational paths",
       {keys::embedding_size().decl("Dimension of user, entity, relation rows"),
        keys::reg_weight().decl("Weight of the EmbLoss regulariser"),
        Key("node_dropout_rate", KeyType::kFloat)
            .min(0)
            .max(1)
            .help("Fraction of KG edges KEPT by each forward's sample, evaluation included "
                  "(0 or 1: all)"),
        layers::probability_key("mess_dropout_rate")
            .help("Dropout on each hop's outputs, and on the user-item matrix (training)"),
        Key("sim_regularity", KeyType::kFloat).min(0).help("Weight of the independence loss"),
        Key("context_hops", KeyType::kInt).min(1).help("Propagation hops"),
        Key("n_factors", KeyType::kInt).min(1).help("Number of user intents"),
        Key("ind", KeyType::kString)
            .choices({"cosine", "distance", "mi"})
            .help("Independence loss between the intents' relation logits"),
        Key("temperature", KeyType::kFloat).above(0).help("Temperature of the mi independence")},
       [](const ModelContext& ctx) { return std::make_shared<KGIN>(ctx); }});
}

}  // namespace recbole::models

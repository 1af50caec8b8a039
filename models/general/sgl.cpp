#include "models/general/sgl.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

namespace {

// `count` distinct values of [0, n), uniformly without replacement (partial Fisher–Yates).
std::vector<int64_t> sample_without_replacement(int64_t n, int64_t count, std::mt19937_64& rng) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  for (int64_t k = 0; k < count; ++k) {
    std::uniform_int_distribution<int64_t> pick(k, n - 1);
    std::swap(all[static_cast<size_t>(k)], all[static_cast<size_t>(pick(rng))]);
  }
  all.resize(static_cast<size_t>(count));
  return all;
}

SGL::Augment parse_augment(const std::string& type) {
  if (type == "ND") return SGL::Augment::kNodeDrop;
  if (type == "RW") return SGL::Augment::kRandomWalk;
  return SGL::Augment::kEdgeDrop;
}

}  // namespace

SGL::SGL(const ModelContext& ctx)
    : CachedFactorModel("SGL", ctx),
      augment_(parse_augment(ctx.config.get_string("type"))),
      n_layers_(ctx.config.get_int("n_layers")),
      drop_ratio_(ctx.config.get_double("drop_ratio")),
      ssl_tau_(ctx.config.get_double("ssl_tau")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      ssl_weight_(ctx.config.get_double("ssl_weight")),
      seed_(static_cast<uint64_t>(ctx.config.get_int("seed"))) {
  for (int32_t u = 0; u < ctx.train.n_users(); ++u)
    for (const int32_t* it = ctx.train.row_begin(u); it != ctx.train.row_end(u); ++it)
      pair_users_.push_back(u), pair_items_.push_back(*it);
  // Weighted: a repeated pair would count twice (the training matrix handed to models has
  // already collapsed repeats, so on ml-100k this equals the binary graph).
  main_.emplace_back(layers::symmetric_normalized(layers::bipartite_adjacency(
                         ctx.n_users, ctx.n_items, pair_users_, pair_items_, /*weighted=*/true)),
                     /*symmetric=*/true, ctx.device);
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierUniform);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierUniform);
}

std::vector<layers::SparseMatrix> SGL::view_graphs(int64_t epoch, int view) const {
  std::mt19937_64 rng(splitmix64_hash(splitmix64_hash(seed_) ^
                                      splitmix64_hash(static_cast<uint64_t>(epoch) * 2 + view)));
  const int64_t n_pairs = static_cast<int64_t>(pair_users_.size());
  // The normalised weighted graph of the kept pairs (each kept pair weighs 1).
  auto graph_of = [&](const std::vector<int64_t>& kept) {
    std::vector<int32_t> u, i;
    u.reserve(kept.size());
    i.reserve(kept.size());
    for (int64_t k : kept)
      u.push_back(pair_users_[static_cast<size_t>(k)]),
          i.push_back(pair_items_[static_cast<size_t>(k)]);
    return layers::symmetric_normalized(
        layers::bipartite_adjacency(n_users(), n_items(), u, i, /*weighted=*/true));
  };
  auto edge_drop = [&] {
    const auto keep = static_cast<int64_t>(static_cast<double>(n_pairs) * (1.0 - drop_ratio_));
    return graph_of(sample_without_replacement(n_pairs, keep, rng));
  };
  std::vector<layers::SparseMatrix> graphs;
  switch (augment_) {
    case Augment::kEdgeDrop:
      graphs.push_back(edge_drop());
      break;
    case Augment::kRandomWalk:
      for (int64_t l = 0; l < n_layers_; ++l) graphs.push_back(edge_drop());
      break;
    case Augment::kNodeDrop: {
      // Ids drawn from 0..n − 1, the pad ids included, as RecBole.
      std::vector<char> user_out(static_cast<size_t>(n_users()), 0);
      std::vector<char> item_out(static_cast<size_t>(n_items()), 0);
      const auto drop_u = static_cast<int64_t>(static_cast<double>(n_users()) * drop_ratio_);
      const auto drop_i = static_cast<int64_t>(static_cast<double>(n_items()) * drop_ratio_);
      for (int64_t u : sample_without_replacement(n_users(), drop_u, rng))
        user_out[static_cast<size_t>(u)] = 1;
      for (int64_t i : sample_without_replacement(n_items(), drop_i, rng))
        item_out[static_cast<size_t>(i)] = 1;
      std::vector<int64_t> kept;
      for (int64_t k = 0; k < n_pairs; ++k)
        if (!user_out[static_cast<size_t>(pair_users_[static_cast<size_t>(k)])] &&
            !item_out[static_cast<size_t>(pair_items_[static_cast<size_t>(k)])])
          kept.push_back(k);
      graphs.push_back(graph_of(kept));
      break;
    }
  }
  return graphs;
}

void SGL::build_views(int64_t epoch) {
  if (views_epoch_ == epoch) return;
  auto to_operators = [&](std::vector<layers::SparseMatrix> graphs) {
    std::vector<layers::GraphOperator> ops;
    for (auto& g : graphs) ops.emplace_back(std::move(g), /*symmetric=*/true, device_manager());
    return ops;
  };
  view1_ = to_operators(view_graphs(epoch, 1));
  view2_ = to_operators(view_graphs(epoch, 2));
  views_epoch_ = epoch;
}

std::pair<torch::Tensor, torch::Tensor> SGL::propagate(
    const std::vector<layers::GraphOperator>& graphs) const {
  torch::Tensor e = torch::cat({user_embedding_, item_embedding_});
  std::vector<torch::Tensor> all{e};
  for (int64_t l = 0; l < n_layers_; ++l) {
    const size_t g = std::min(static_cast<size_t>(l), graphs.size() - 1);
    e = layers::spmm(graphs[g], e);
    all.push_back(e);
  }
  const torch::Tensor mean = torch::stack(all, 1).mean(1);
  return {mean.slice(0, 0, n_users()), mean.slice(0, n_users())};
}

torch::Tensor SGL::calculate_loss(const data::Batch& batch) {
  drop_factors();
  if (views_epoch_ < 0) build_views(0);  // trained without the epoch hook (tests)
  namespace F = torch::nn::functional;
  auto [users, items] = propagate(main_);
  const torch::Tensor u = users.index_select(0, batch.users);
  const torch::Tensor pos = (u * items.index_select(0, batch.items)).sum(1);
  const torch::Tensor neg = (u * items.index_select(0, batch.neg_items)).sum(1);
  // −log σ(x) computed stably as −logsigmoid(x) (equal wherever RecBole's form is finite).
  const torch::Tensor bpr = -F::logsigmoid(pos - neg).sum();
  const torch::Tensor reg = layers::emb_loss({user_embedding_.index_select(0, batch.users),
                                              item_embedding_.index_select(0, batch.items),
                                              item_embedding_.index_select(0, batch.neg_items)});
  auto [users1, items1] = propagate(view1_);
  auto [users2, items2] = propagate(view2_);
  const torch::Tensor ssl =
      layers::info_nce_sum(users1, batch.users, users2, batch.users, ssl_tau_) +
      layers::info_nce_sum(items1, batch.items, items2, batch.items, ssl_tau_);
  return bpr + reg_weight_ * reg + ssl_weight_ * ssl;
}

std::pair<torch::Tensor, torch::Tensor> SGL::evaluation_factors() { return propagate(main_); }

void SGL::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "views_epoch", views_epoch_);
}

void SGL::load_training_state(torch::serialize::InputArchive& archive) {
  const int64_t epoch = layers::read_int(archive, "views_epoch");
  views_epoch_ = -1;
  if (epoch >= 0) build_views(epoch);
}

RECBOLE_REGISTER_MODEL(SGL) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"SGL",
       "general",
       InputType::kPairwise,
       "Self-supervised graph learning: LightGCN plus InfoNCE between two perturbed graphs",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("type", KeyType::kString)
            .choices({"ED", "ND", "RW"})
            .help("Graph perturbation: edge dropout, node dropout or random walk"),
        Key("n_layers", KeyType::kInt).min(1).help("Propagation layers over the user-item graph"),
        Key("ssl_tau", KeyType::kFloat).above(0).help("Temperature of the InfoNCE loss"),
        keys::reg_weight().decl("Weight of the layer-0 embedding norm"),
        Key("ssl_weight", KeyType::kFloat).min(0).help("Weight of the InfoNCE loss"),
        layers::probability_key("drop_ratio")
            .help("Share in [0, 1) of edges (ED, RW) or nodes (ND) dropped in each view")},
       [](const ModelContext& ctx) { return std::make_shared<SGL>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/ncl.h"

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/layers/kmeans.h"
#include "models/layers/losses.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

namespace {

// k-means needs at least as many rows as clusters (RecBole's faiss aborts, issue #1957): too
// many is a ConfigError naming the key and the largest value this dataset allows.
int64_t checked_clusters(const config::Config& config, int64_t users, int64_t items) {
  const int64_t k = config.get_int("num_clusters");
  const int64_t most = std::min(users, items);
  if (k > most)
    throw ConfigError(
        config.source("num_clusters") + ": NCL key num_clusters: " + std::to_string(k) +
        " clusters need as many rows in each table, but this " + "dataset's training split has " +
        std::to_string(users) + " user ids and " + std::to_string(items) +
        " item ids (pad included); expected num_clusters <= " + std::to_string(most) +
        " (RecBole's own test uses 100)");
  return k;
}

}  // namespace

NCL::NCL(const ModelContext& ctx)
    : CachedFactorModel("NCL", ctx),
      adjacency_(layers::symmetric_normalized(layers::bipartite_adjacency(ctx.train)),
                 /*symmetric=*/true, ctx.device),
      n_layers_(ctx.config.get_int("n_layers")),
      hyper_layers_(ctx.config.get_int("hyper_layers")),
      m_step_(ctx.config.get_int("m_step")),
      warm_up_step_(ctx.config.get_int("warm_up_step")),
      user_k_(checked_clusters(ctx.config, ctx.n_users, ctx.n_items)),
      item_k_(user_k_),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      ssl_temp_(ctx.config.get_double("ssl_temp")),
      ssl_reg_(ctx.config.get_double("ssl_reg")),
      alpha_(ctx.config.get_double("alpha")),
      proto_reg_(ctx.config.get_double("proto_reg")),
      seed_(static_cast<uint64_t>(ctx.config.get_int("seed"))) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierUniform);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierUniform);
}

void NCL::on_epoch_start(int64_t epoch) {
  epoch_ = epoch;
  if (epoch % m_step_ == 0) e_step();
}

void NCL::e_step() {
  namespace F = torch::nn::functional;
  torch::NoGradGuard no_grad;
  auto run = [&](const torch::Tensor& table, int64_t k, uint64_t salt, torch::Tensor* centroids,
                 torch::Tensor* cluster) {
    layers::KMeansOptions options;
    options.k = k;
    options.seed = splitmix64_hash(splitmix64_hash(seed_) ^
                                   splitmix64_hash(static_cast<uint64_t>(epoch_) * 2 + salt));
    layers::KMeansResult r =
        layers::kmeans(DeviceManager::to_host(table.detach()).contiguous(), options);
    const auto& device = device_manager();
    *centroids = device.place(F::normalize(r.centroids, F::NormalizeFuncOptions().dim(1)));
    *cluster = device.place(r.assignment);
  };
  run(user_embedding_, user_k_, 0, &user_centroids_, &user_cluster_);
  run(item_embedding_, item_k_, 1, &item_centroids_, &item_cluster_);
}

std::vector<torch::Tensor> NCL::propagate_layers() const {
  std::vector<torch::Tensor> all;
  layers::mean_propagation(adjacency_, torch::cat({user_embedding_, item_embedding_}),
                           std::max(n_layers_, 2 * hyper_layers_), &all);
  return all;
}

std::pair<torch::Tensor, torch::Tensor> NCL::final_embeddings(
    const std::vector<torch::Tensor>& all) const {
  const std::vector<torch::Tensor> used(all.begin(), all.begin() + n_layers_ + 1);
  const torch::Tensor mean = torch::stack(used, 1).mean(1);
  return {mean.slice(0, 0, n_users()), mean.slice(0, n_users())};
}

torch::Tensor NCL::calculate_loss(const data::Batch& batch) {
  drop_factors();
  const std::vector<torch::Tensor> all = propagate_layers();
  auto [users, items] = final_embeddings(all);
  const torch::Tensor u = users.index_select(0, batch.users);
  const torch::Tensor pos = (u * items.index_select(0, batch.items)).sum(1);
  const torch::Tensor neg = (u * items.index_select(0, batch.neg_items)).sum(1);
  const torch::Tensor ego_u = user_embedding_.index_select(0, batch.users);
  const torch::Tensor ego_i = item_embedding_.index_select(0, batch.items);
  torch::Tensor loss =
      layers::bpr_loss(pos, neg) +
      reg_weight_ *
          layers::emb_loss({ego_u, ego_i, item_embedding_.index_select(0, batch.neg_items)});

  // Structural neighbours: layer 2·hyper_layers against layer 0.
  const torch::Tensor context = all[static_cast<size_t>(2 * hyper_layers_)];
  const torch::Tensor context_u = context.slice(0, 0, n_users());
  const torch::Tensor context_i = context.slice(0, n_users());
  loss = loss + ssl_reg_ * (layers::info_nce_sum(context_u, batch.users, user_embedding_,
                                                 batch.users, ssl_temp_) +
                            alpha_ * layers::info_nce_sum(context_i, batch.items, item_embedding_,
                                                          batch.items, ssl_temp_));

  // Semantic neighbours (prototypes), after the warm-up.
  if (epoch_ >= warm_up_step_) {
    if (!user_centroids_.defined()) e_step();
    const torch::Tensor proto_u =
        layers::info_nce_sum(user_embedding_, batch.users, user_centroids_,
                             user_cluster_.index_select(0, batch.users), ssl_temp_);
    const torch::Tensor proto_i =
        layers::info_nce_sum(item_embedding_, batch.items, item_centroids_,
                             item_cluster_.index_select(0, batch.items), ssl_temp_);
    loss = loss + proto_reg_ * (proto_u + proto_i);
  }
  return loss;
}

std::pair<torch::Tensor, torch::Tensor> NCL::evaluation_factors() {
  return final_embeddings(propagate_layers());
}

void NCL::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "epoch", epoch_);
  const bool clustered = user_centroids_.defined();
  layers::write_int(archive, "clustered", clustered);
  if (!clustered) return;
  // The E-step replaces these tensors and never changes them in place: the background writer
  // may read them as they are.
  archive.write("user_centroids", user_centroids_);
  archive.write("item_centroids", item_centroids_);
  archive.write("user_cluster", user_cluster_);
  archive.write("item_cluster", item_cluster_);
}

void NCL::load_training_state(torch::serialize::InputArchive& archive) {
  epoch_ = layers::read_int(archive, "epoch");
  if (!layers::read_int(archive, "clustered")) return;
  archive.read("user_centroids", user_centroids_);
  archive.read("item_centroids", item_centroids_);
  archive.read("user_cluster", user_cluster_);
  archive.read("item_cluster", item_cluster_);
}

RECBOLE_REGISTER_MODEL(NCL) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NCL",
       "general",
       InputType::kPairwise,
       "Neighbourhood-enriched contrastive learning: LightGCN plus structural and prototype "
       "InfoNCE",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("n_layers", KeyType::kInt).min(1).help("Propagation layers averaged into the output"),
        keys::reg_weight().decl("Weight of the layer-0 embedding norm"),
        Key("ssl_temp", KeyType::kFloat).above(0).help("Temperature of both InfoNCE losses"),
        Key("ssl_reg", KeyType::kFloat).min(0).help("Weight of the structural InfoNCE loss"),
        Key("hyper_layers", KeyType::kInt)
            .min(1)
            .help("The structural loss contrasts layer 2*hyper_layers with layer 0"),
        Key("alpha", KeyType::kFloat).min(0).help("Weight of the items' structural loss"),
        Key("proto_reg", KeyType::kFloat).min(0).help("Weight of the prototype InfoNCE loss"),
        Key("num_clusters", KeyType::kInt)
            .min(1)
            .help("k-means clusters per table (at most the rows of the smaller table)"),
        Key("m_step", KeyType::kInt).min(1).help("Run the k-means E-step every m_step epochs"),
        Key("warm_up_step", KeyType::kInt)
            .min(0)
            .help("Epochs trained without the prototype loss")},
       [](const ModelContext& ctx) { return std::make_shared<NCL>(ctx); }});
}

}  // namespace recbole::models

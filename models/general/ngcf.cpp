#include "models/general/ngcf.h"

#include <string>

#include <torch/torch.h>

#include "models/layers/gathered_bpr_loss.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/ngcf_layer.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

NGCF::NGCF(const ModelContext& ctx)
    : CachedFactorModel("NGCF", ctx),
      adjacency_(layers::symmetric_normalized(layers::bipartite_adjacency(ctx.train)),
                 /*symmetric=*/true, ctx.device),
      node_dropout_(ctx.config.get_double("node_dropout")),
      message_dropout_(ctx.config.get_double("message_dropout")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_parameter("user_embedding", torch::empty({ctx.n_users, d}));
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  int64_t in = d;
  const std::vector<int64_t> hidden = ctx.config.get_int_list("hidden_size_list");
  for (size_t k = 0; k < hidden.size(); ++k) {
    w1_.push_back(register_module("w1_" + std::to_string(k), torch::nn::Linear(in, hidden[k])));
    w2_.push_back(register_module("w2_" + std::to_string(k), torch::nn::Linear(in, hidden[k])));
    in = hidden[k];
  }
  // On the CPU from the seeded generator, then to the device. (initialize() walks a module
  // tree from a shared_ptr, which the model under construction is not yet: its parts instead.)
  {
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_normal_(user_embedding_);
    torch::nn::init::xavier_normal_(item_embedding_);
  }
  for (size_t k = 0; k < w1_.size(); ++k) {
    layers::initialize(*w1_[k], layers::Init::kXavierNormal);
    layers::initialize(*w2_[k], layers::Init::kXavierNormal);
  }
  to(ctx.device.device());
}

layers::GraphOperator NGCF::dropped_adjacency() const {
  layers::SparseMatrix m = adjacency_.matrix();
  const torch::Tensor keep =
      torch::bernoulli(torch::full({m.nnz()}, 1.0 - node_dropout_, torch::kFloat64));
  const double* k = keep.data_ptr<double>();
  const auto scale = static_cast<float>(1.0 / (1.0 - node_dropout_));
  layers::SparseMatrix out;
  out.rows = m.rows;
  out.cols = m.cols;
  out.indptr.assign(static_cast<size_t>(m.rows) + 1, 0);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t e = m.indptr[r]; e < m.indptr[r + 1]; ++e)
      if (k[e] != 0.0) {
        out.indices.push_back(m.indices[static_cast<size_t>(e)]);
        out.values.push_back(m.values[static_cast<size_t>(e)] * scale);
      }
    out.indptr[static_cast<size_t>(r) + 1] = out.nnz();
  }
  // Entries (directed edges) are dropped independently, so the result is not symmetric.
  return layers::GraphOperator(std::move(out), /*symmetric=*/false, device_manager());
}

torch::Tensor NGCF::propagate_nodes() const {
  const layers::GraphOperator adj =
      (is_training() && node_dropout_ > 0) ? dropped_adjacency() : adjacency_;
  torch::Tensor e = torch::cat({user_embedding_, item_embedding_});
  std::vector<torch::Tensor> all{e};
  for (size_t k = 0; k < w1_.size(); ++k) {
    e = layers::ngcf_layer(e, layers::spmm(adj, e), w1_[k]->weight, w1_[k]->bias, w2_[k]->weight,
                           w2_[k]->bias, message_dropout_, is_training());
    all.push_back(e);
  }
  return torch::cat(all, 1);
}

std::pair<torch::Tensor, torch::Tensor> NGCF::propagate() const {
  const torch::Tensor nodes = propagate_nodes();
  return {nodes.slice(0, 0, n_users()), nodes.slice(0, n_users())};
}

torch::Tensor NGCF::calculate_loss(const data::Batch& batch) {
  drop_factors();
  // Items are nodes n_users + item of the propagated table.
  return layers::gathered_bpr_loss(propagate_nodes(), batch.users, batch.items + n_users(),
                                   batch.neg_items + n_users(), reg_weight_);
}

torch::Tensor NGCF::train_step(const data::Batch& batch, TrainStep& step) {
  BlasThreadsScope one_blas_thread(1);
  return CachedFactorModel::train_step(batch, step);
}

std::pair<torch::Tensor, torch::Tensor> NGCF::evaluation_factors() { return propagate(); }

RECBOLE_REGISTER_MODEL(NGCF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NGCF",
       "general",
       InputType::kPairwise,
       "Neural graph collaborative filtering: sum and product messages, layers concatenated",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("hidden_size_list", KeyType::kIntList)
            .min(1)
            .help("Output size of each propagation layer"),
        layers::probability_key("node_dropout")
            .help("Probability in [0, 1) of dropping each graph entry per training forward"),
        layers::probability_key("message_dropout")
            .help("Dropout in [0, 1) on each layer's messages while training"),
        keys::reg_weight().decl("Weight of the final embedding norm")},
       [](const ModelContext& ctx) { return std::make_shared<NGCF>(ctx); }});
}

}  // namespace recbole::models

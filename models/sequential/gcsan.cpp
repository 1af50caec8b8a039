#include "models/sequential/gcsan.h"

#include <cmath>

#include "models/layers/sequence.h"
#include "models/sequential/sasrec.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

GCSAN::GCSAN(const ModelContext& ctx)
    : SequentialModel("GCSAN", ctx),
      weight_(ctx.config.get_double("weight")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const layers::TransformerOptions o = transformer_options(ctx.config);
  const double std = ctx.config.get_double("initializer_range");
  const int64_t d = o.hidden_size;
  item_embedding_ =
      register_parameter("item_embedding", torch::empty({ctx.n_items, d}).normal_(0.0, std));
  gnn_ = register_module("gnn", layers::GatedGraph(d, ctx.config.get_int("step"), false));
  encoder_ = register_module("encoder", layers::TransformerEncoder(o));
  {
    torch::NoGradGuard no_grad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(d));
    for (torch::Tensor* p : {&gnn_->w_ih, &gnn_->w_hh, &gnn_->b_ih, &gnn_->b_hh})
      p->uniform_(-bound, bound);
  }
  layers::init_transformer_weights(*this, std);
  to(ctx.device.device());
}

torch::Tensor GCSAN::encode(const data::Batch& batch) {
  const torch::Tensor states = gnn_->position_states(item_embedding_, layers::item_seq(batch),
                                                     layers::item_seq_len(batch), device_manager());
  const int64_t width = states.size(1);
  const torch::Tensor h_t = layers::gather_last(states, layers::item_seq_len(batch));
  const torch::Tensor seq = layers::item_seq(batch).narrow(1, 0, width);
  const torch::Tensor a_t =
      layers::gather_last(encoder_->forward(states, layers::attention_mask(seq, /*causal=*/true)),
                          layers::item_seq_len(batch));
  return weight_ * a_t + (1.0 - weight_) * h_t;
}

torch::Tensor GCSAN::calculate_loss(const data::Batch& batch) {
  return SequentialModel::calculate_loss(batch) +
         reg_weight_ * item_embedding_.norm() / static_cast<double>(item_embedding_.size(0));
}

RECBOLE_REGISTER_MODEL(GCSAN) {
  using config::Key;
  using config::KeyType;
  std::vector<config::KeyDecl> keys = transformer_keys();
  keys.push_back(Key("weight", KeyType::kFloat)
                     .min(0)
                     .max(1)
                     .help("Share of the transformer's state in the output (the rest: the GNN's)"));
  keys.push_back(Key("step", KeyType::kInt).min(1).help("Gated GNN steps"));
  keys.push_back(keys::reg_weight().decl("Weight of the item-table norm"));
  register_model({"GCSAN", "sequential", InputType::kNextItem,
                  "Graph contextualised self-attention: a gated GNN over each sequence's item "
                  "graph, then a causal transformer",
                  std::move(keys),
                  [](const ModelContext& ctx) { return std::make_shared<GCSAN>(ctx); }});
}

}  // namespace recbole::models

#include "models/sequential/srgnn.h"

#include <cmath>

#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

SRGNN::SRGNN(const ModelContext& ctx) : SequentialModel("SRGNN", ctx) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  gnn_ = register_module("gnn", layers::GatedGraph(d, ctx.config.get_int("step"), true));
  auto linear = [](int64_t in, int64_t out, bool bias) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  };
  w1_ = register_module("linear_one", linear(d, d, true));
  w2_ = register_module("linear_two", linear(d, d, true));
  w3_ = register_module("linear_three", linear(d, 1, false));
  transform_ = register_module("linear_transform", linear(2 * d, d, true));
  {
    // RecBole draws every parameter from U(−1/√d, 1/√d).
    torch::NoGradGuard no_grad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(d));
    for (torch::Tensor& p : parameters()) p.uniform_(-bound, bound);
  }
  to(ctx.device.device());
}

torch::Tensor SRGNN::encode(const data::Batch& batch) {
  const torch::Tensor states = gnn_->position_states(item_embedding_, layers::item_seq(batch),
                                                     layers::item_seq_len(batch), device_manager());
  const int64_t width = states.size(1);
  const torch::Tensor h_t = layers::gather_last(states, layers::item_seq_len(batch));
  const torch::Tensor alpha =
      w3_->forward(torch::sigmoid(w1_->forward(h_t).unsqueeze(1) + w2_->forward(states)));
  const torch::Tensor mask =
      (layers::item_seq(batch).narrow(1, 0, width) > 0).unsqueeze(2).to(states.scalar_type());
  const torch::Tensor a = (alpha * mask * states).sum(1);
  return transform_->forward(torch::cat({a, h_t}, 1));
}

RECBOLE_REGISTER_MODEL(SRGNN) {
  using config::Key;
  using config::KeyType;
  register_model({"SRGNN",
                  "sequential",
                  InputType::kNextItem,
                  "Session-based recommendation with graph neural networks: a gated GNN over "
                  "each sequence's item graph and an attentive readout",
                  {keys::embedding_size().decl("Dimension of the items"),
                   Key("step", KeyType::kInt).min(1).help("Gated GNN steps"),
                   Key("loss_type", KeyType::kString)
                       .choices({"CE", "BPR"})
                       .help("CE over every item, or BPR with a sampled negative")},
                  [](const ModelContext& ctx) { return std::make_shared<SRGNN>(ctx); }});
}

}  // namespace recbole::models

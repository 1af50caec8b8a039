#include "models/sequential/stamp.h"

#include "models/layers/init.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

STAMP::STAMP(const ModelContext& ctx) : SequentialModel("STAMP", ctx) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  auto linear = [d](bool bias) {
    return torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(bias));
  };
  w1_ = register_module("w1", linear(false));
  w2_ = register_module("w2", linear(false));
  w3_ = register_module("w3", linear(false));
  w0_ = register_module("w0", torch::nn::Linear(torch::nn::LinearOptions(d, 1).bias(false)));
  b_a_ = register_parameter("b_a", torch::zeros({d}));
  mlp_a_ = register_module("mlp_a", linear(true));
  mlp_b_ = register_module("mlp_b", linear(true));
  {
    torch::NoGradGuard no_grad;
    item_embedding_.normal_(0.0, 0.002);
  }
  layers::normal_linears(*this, 0.05);
  to(ctx.device.device());
}

torch::Tensor STAMP::encode(const data::Batch& batch) {
  const torch::Tensor x = lookup(layers::item_seq(batch));  // [B, L, d], padding positions included
  const torch::Tensor x_t = layers::gather_last(x, layers::item_seq_len(batch));
  const torch::Tensor m_s = x.sum(1) / layers::item_seq_len(batch).unsqueeze(1).to(x.scalar_type());
  const torch::Tensor alpha = w0_->forward(torch::sigmoid(
      w1_->forward(x) + (w2_->forward(x_t) + w3_->forward(m_s) + b_a_).unsqueeze(1)));  // [B,L,1]
  const torch::Tensor m_a = (alpha * x).sum(1) + m_s;
  return torch::tanh(mlp_a_->forward(m_a)) * torch::tanh(mlp_b_->forward(x_t));
}

RECBOLE_REGISTER_MODEL(STAMP) {
  using config::Key;
  using config::KeyType;
  register_model({"STAMP",
                  "sequential",
                  InputType::kNextItem,
                  "Short-term attention/memory priority: an attention over the session and the "
                  "last item, joined by a trilinear product",
                  {keys::embedding_size().decl("Dimension of the items"),
                   Key("loss_type", KeyType::kString)
                       .choices({"CE", "BPR"})
                       .help("CE over every item, or BPR with a sampled negative")},
                  [](const ModelContext& ctx) { return std::make_shared<STAMP>(ctx); }});
}

}  // namespace recbole::models

#include "models/context/fignn.h"

#include <limits>

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

FiGNN::FiGNN(const ModelContext& ctx)
    : ContextModel("FiGNN", ctx), attention_size_(ctx.config.get_int("attention_size")) {
  const int64_t a = attention_size_, f = num_fields_;
  const int64_t heads = ctx.config.get_int("num_heads");
  if (a % heads != 0)
    throw ConfigError("FiGNN: attention_size " + std::to_string(a) +
                      " is not a multiple of num_heads " + std::to_string(heads));
  att_embedding_ = register_module("att_embedding", torch::nn::Linear(embedding_size_, a));
  hidden_dropout_ = ctx.config.get_double("hidden_dropout_prob");
  attention_ = register_module(
      "attention",
      layers::MultiHeadSelfAttention(a, heads, ctx.config.get_double("attn_dropout_prob")));
  residual_ = register_module("residual", torch::nn::Linear(embedding_size_, a));
  edge_ =
      register_module("edge", torch::nn::Linear(torch::nn::LinearOptions(2 * a, 1).bias(false)));
  for (int64_t t = 1; t < ctx.config.get_int("n_layers"); ++t) {
    const std::string s = std::to_string(t);
    w_in_.push_back(register_parameter("w_in" + s, torch::empty({f, a, a})));
    w_out_.push_back(register_parameter("w_out" + s, torch::empty({f, a, a})));
    bias_.push_back(register_parameter("bias" + s, torch::zeros({a})));
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_normal_(w_in_.back());
    torch::nn::init::xavier_normal_(w_out_.back());
  }
  gru_ = register_module("gru", torch::nn::GRUCell(a, a));
  node_score_ =
      register_module("node_score", torch::nn::Linear(torch::nn::LinearOptions(a, 1).bias(false)));
  node_weight_ = register_module("node_weight",
                                 torch::nn::Linear(torch::nn::LinearOptions(f * a, f).bias(false)));
  finish();
}

torch::Tensor FiGNN::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);  // [B, F, d]
  const int64_t b = e.size(0), f = e.size(1), a = attention_size_;
  torch::Tensor h = attention_->forward(
      layers::dropout(att_embedding_->forward(e), hidden_dropout_, is_training()));  // [B, F, A]
  const torch::Tensor h0 = torch::relu(h + residual_->forward(e));
  // Edges: w·[H0_i ; H0_j] = w_left·H0_i + w_right·H0_j, softmax over j without self-loops.
  const torch::Tensor w = edge_->weight.view({2, a});
  torch::Tensor s = h0.matmul(w[0]).unsqueeze(2) + h0.matmul(w[1]).unsqueeze(1);  // [B, F, F]
  s = torch::leaky_relu(s, 0.01).masked_fill(
      torch::eye(f, torch::TensorOptions().dtype(torch::kBool).device(s.device())),
      -std::numeric_limits<float>::infinity());
  const torch::Tensor g = torch::softmax(s, 2);
  h = h0;
  for (size_t t = 0; t < w_in_.size(); ++t) {
    torch::Tensor m = torch::einsum("jxy,bjy->bjx", {w_out_[t], h});
    torch::Tensor in = torch::einsum("ixy,biy->bix", {w_in_[t], g.matmul(m)}) + bias_[t];
    h = gru_->forward(in.reshape({b * f, a}), h.reshape({b * f, a})).view({b, f, a}) + h0;
  }
  torch::Tensor score = node_score_->forward(h).squeeze(2);    // [B, F]
  torch::Tensor weight = node_weight_->forward(h.flatten(1));  // [B, F]
  return (score * weight).sum(1);
}

RECBOLE_REGISTER_MODEL(FiGNN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FiGNN",
       "context",
       InputType::kPointwise,
       "FiGNN: the fields as a graph's nodes, self-attention for their first states, attentional "
       "edges and GRU propagation",
       {keys::embedding_size().decl("Width of the field embeddings"),
        Key("attention_size", KeyType::kInt).min(1).help("Width of the node states"),
        Key("n_layers", KeyType::kInt).min(1).help("Graph layers (n_layers − 1 propagation steps)"),
        Key("num_heads", KeyType::kInt).min(1).help("Attention heads (divide attention_size)"),
        layers::probability_key("hidden_dropout_prob")
            .help("Dropout on the projected field embeddings, in [0, 1)"),
        layers::probability_key("attn_dropout_prob")
            .help("Dropout on the attention weights, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<FiGNN>(ctx); }});
}

}  // namespace recbole::models

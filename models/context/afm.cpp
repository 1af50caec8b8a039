#include "models/context/afm.h"

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

AFM::AFM(const ModelContext& ctx)
    : ContextModel("AFM", ctx),
      dropout_(keys::dropout_prob().get(ctx.config)),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < num_fields_; ++i)
    for (int64_t j = i + 1; j < num_fields_; ++j) r.push_back(i), c.push_back(j);
  rows_ = register_buffer("rows", torch::tensor(r, torch::kInt64));
  cols_ = register_buffer("cols", torch::tensor(c, torch::kInt64));
  const int64_t a = ctx.config.get_int("attention_size");
  attention_ = register_module(
      "attention", torch::nn::Linear(torch::nn::LinearOptions(embedding_size_, a).bias(false)));
  h_ = register_parameter("h", torch::randn({a}));
  p_ = register_parameter("p", torch::randn({embedding_size_}));
  finish();
}

torch::Tensor AFM::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);
  torch::Tensor pairs = e.index_select(1, rows_) * e.index_select(1, cols_);  // [B, P, d]
  torch::Tensor score = torch::relu(attention_->forward(pairs)).matmul(h_);   // [B, P]
  torch::Tensor weight = torch::softmax(score, 1).unsqueeze(2);
  torch::Tensor s = layers::dropout((weight * pairs).sum(1), dropout_, is_training());  // [B, d]
  return first_order(batch).squeeze(1) + s.matmul(p_);
}

torch::Tensor AFM::regularizer() { return reg_weight_ * attention_->weight.norm(); }

RECBOLE_REGISTER_MODEL(AFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"AFM",
       "context",
       InputType::kPointwise,
       "AFM: attention over the pairwise products of field embeddings, plus first-order weights",
       {keys::embedding_size().decl("Width of the field embeddings"),
        Key("attention_size", KeyType::kInt).min(1).help("Width of the attention layer"),
        keys::dropout_prob().decl("Dropout on the pooled pair vector, in [0, 1)"),
        keys::reg_weight().decl("Weight of the model's norm regulariser (added once per batch)")},
       [](const ModelContext& ctx) { return std::make_shared<AFM>(ctx); }});
}

}  // namespace recbole::models

#include "models/sequential/core.h"

#include <cmath>

#include "models/layers/dropout.h"
#include "models/layers/item_cross_entropy.h"
#include "models/layers/key_checks.h"
#include "models/layers/sequence.h"
#include "models/sequential/sasrec.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace {

// Each row scaled to unit L2 norm (the cosine of CORE's scores).
torch::Tensor core_unit_rows(const torch::Tensor& t) {
  return torch::nn::functional::normalize(t, torch::nn::functional::NormalizeFuncOptions().dim(-1));
}

}  // namespace

CORE::CORE(const ModelContext& ctx)
    : SequentialModel("CORE", ctx),
      transformer_(ctx.config.get_string("dnn_type") == "trm"),
      sess_dropout_(ctx.config.get_double("sess_dropout")),
      item_dropout_(ctx.config.get_double("item_dropout")),
      hidden_dropout_(ctx.config.get_double("hidden_dropout_prob")),
      temperature_(ctx.config.get_double("temperature")) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, d}));
  if (transformer_) {
    const layers::TransformerOptions o =
        transformer_options(ctx.config, keys::embedding_size().name().c_str());
    position_embedding_ = register_parameter("position_embedding", torch::empty({max_len_, d}));
    layer_norm_ = register_module(
        "layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
    encoder_ = register_module("encoder", layers::TransformerEncoder(o));
    to_logit_ = register_module("to_logit", torch::nn::Linear(d, 1));
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(d));
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : parameters()) p.uniform_(-bound, bound);
  }
  to(ctx.device.device());
}

torch::Tensor CORE::weights(const torch::Tensor& item_seq, const torch::Tensor& x) {
  const torch::Tensor present = item_seq.gt(0);  // [B, L]
  if (!transformer_) {
    const torch::Tensor m = present.to(x.scalar_type());
    return m / m.sum(1, /*keepdim=*/true);
  }
  const int64_t L = item_seq.size(1);
  torch::Tensor y = x + position_embedding_.narrow(0, 0, L).unsqueeze(0);
  y = layers::dropout(layer_norm_->forward(y), hidden_dropout_, is_training());
  y = encoder_->forward(y, layers::attention_mask(item_seq, /*causal=*/true));
  const torch::Tensor logits =
      to_logit_->forward(y).squeeze(-1).to(torch::kFloat64).masked_fill(~present, -9e15);
  return torch::softmax(logits, 1).to(x.scalar_type());
}

torch::Tensor CORE::encode(const data::Batch& batch) {
  // Positions past a batch's longest sequence hold padding: zero weight in both weightings, and
  // the causal transformer's earlier positions never read them.
  const int64_t longest = layers::item_seq_len(batch).max().item<int64_t>();
  const torch::Tensor item_seq = layers::item_seq(batch).narrow(1, 0, longest);
  const torch::Tensor x = layers::dropout(lookup(item_seq), sess_dropout_, is_training());
  const torch::Tensor alpha = weights(item_seq, x);  // [B, L]
  return core_unit_rows((alpha.unsqueeze(2) * x).sum(1));
}

torch::Tensor CORE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor h = encode(batch);
  const torch::Tensor items =
      core_unit_rows(layers::dropout(item_embedding_, item_dropout_, is_training()));
  return layers::item_cross_entropy(h, items, {}, batch.items, 1.0 / temperature_) /
         static_cast<double>(h.size(0));
}

torch::Tensor CORE::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(encode(batch), core_unit_rows(item_embedding_).t()) / temperature_;
}

torch::Tensor CORE::score_items(const torch::Tensor& h, const torch::Tensor& items) const {
  return (h * core_unit_rows(item_embedding_.index_select(0, items))).sum(-1) / temperature_;
}

RECBOLE_REGISTER_MODEL(CORE) {
  using config::Key;
  using config::KeyType;
  std::vector<config::KeyDecl> keys;
  for (config::KeyDecl& k : transformer_keys()) {
    if (k.name == "hidden_size" || k.name == "loss_type") continue;
    if (k.name == "n_heads") k.help = "Attention heads (embedding_size % n_heads == 0)";
    if (k.name == "initializer_range")
      k.help = "Without effect, as in RecBole: every parameter is drawn U(±1/√embedding_size)";
    keys.push_back(std::move(k));
  }
  keys.push_back(keys::embedding_size().decl("Dimension of items and states"));
  keys.push_back(Key("loss_type", KeyType::kString).choices({"CE"}).help("CE over every item"));
  keys.push_back(Key("dnn_type", KeyType::kString)
                     .choices({"trm", "ave"})
                     .help("Position weights: a causal transformer (trm) or the mean (ave)"));
  keys.push_back(layers::probability_key("sess_dropout").help("Dropout of the session's items"));
  keys.push_back(
      layers::probability_key("item_dropout").help("Dropout of the item table in training"));
  keys.push_back(
      Key("temperature", KeyType::kFloat).above(0).help("Temperature τ of the cosine scores"));
  register_model({"CORE", "sequential", InputType::kNextItem,
                  "Consistent representation space: the session as a weighted sum of its item "
                  "vectors (transformer or mean weights), cosine scores over a temperature",
                  std::move(keys),
                  [](const ModelContext& ctx) { return std::make_shared<CORE>(ctx); }});
}

}  // namespace recbole::models

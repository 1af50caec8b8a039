#include "models/sequential/lightsans.h"

#include <cmath>
#include <string>

#include "models/layers/dropout.h"
#include "models/layers/residual_norm.h"
#include "models/layers/sequence.h"
#include "models/sequential/sasrec.h"
#include "recbole/config/config.h"

namespace recbole::models {

LightSANsLayerImpl::LightSANsLayerImpl(const layers::TransformerOptions& o,
                                       const torch::Tensor& theta_k, const torch::Tensor& theta_v)
    : o_(o) {
  o.check_heads();
  const int64_t d = o.hidden_size;
  auto linear = [&](const char* name, int64_t in, int64_t out) {
    return register_module(name, torch::nn::Linear(in, out));
  };
  auto norm = [&](const char* name) {
    return register_module(
        name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
  };
  query_ = linear("query", d, d), key_ = linear("key", d, d), value_ = linear("value", d, d);
  out_ = linear("out", d, d);
  pos_query_ = linear("pos_query", d, d), pos_key_ = linear("pos_key", d, d);
  ff1_ = linear("ff1", d, o.inner_size), ff2_ = linear("ff2", o.inner_size, d);
  ln_pos_ = norm("ln_pos"), ln_attn_ = norm("ln_attn"), ln_ff_ = norm("ln_ff");
  theta_k_ = register_parameter("theta_k", theta_k.clone());
  theta_v_ = register_parameter("theta_v", theta_v.clone());
}

torch::Tensor LightSANsLayerImpl::heads(const torch::Tensor& t) const {
  const int64_t h = o_.n_heads;
  return t.view({t.size(0), t.size(1), h, o_.hidden_size / h}).transpose(1, 2);
}

torch::Tensor LightSANsLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& positions) {
  const int64_t B = x.size(0), L = x.size(1), d = o_.hidden_size;
  const double dh = static_cast<double>(d / o_.n_heads);
  // The L positions pooled into k interests: softmax over L of Y·θ, then its transpose · Y.
  auto pool = [](const torch::Tensor& y, const torch::Tensor& theta) {
    return torch::matmul(torch::softmax(torch::matmul(y, theta), 1).transpose(1, 2), y);
  };
  const torch::Tensor v = value_->forward(x);
  const torch::Tensor q = heads(query_->forward(x));                       // [B, h, L, dh]
  const torch::Tensor k_pooled = heads(pool(key_->forward(x), theta_k_));  // [B, h, k, dh]
  const torch::Tensor v_pooled = heads(pool(v, theta_v_));
  torch::Tensor item = torch::softmax(torch::matmul(q, k_pooled.transpose(-1, -2)) / std::sqrt(dh),
                                      /*dim=*/-2);  // over the queries, as RecBole
  item = torch::matmul(layers::dropout(item, o_.attn_dropout, is_training()), v_pooled);
  const torch::Tensor p = ln_pos_->forward(positions).unsqueeze(0);  // [1, L, d]
  const torch::Tensor qp = heads(pos_query_->forward(p)) / std::sqrt(2.0 * dh);
  const torch::Tensor kp = heads(pos_key_->forward(p));
  const torch::Tensor pos =
      torch::softmax(torch::matmul(qp, kp.transpose(-1, -2)) / std::sqrt(dh), /*dim=*/-2);
  const torch::Tensor context =
      (item + torch::matmul(pos, heads(v))).transpose(1, 2).reshape({B, L, d});
  const torch::Tensor a =
      layers::residual_norm(out_->forward(context), x, ln_attn_->weight, ln_attn_->bias,
                            o_.layer_norm_eps, o_.hidden_dropout, is_training());
  const torch::Tensor f = ff2_->forward(layers::activation(ff1_->forward(a), o_.hidden_act));
  return layers::residual_norm(f, a, ln_ff_->weight, ln_ff_->bias, o_.layer_norm_eps,
                               o_.hidden_dropout, is_training());
}

LightSANs::LightSANs(const ModelContext& ctx)
    : SequentialModel("LightSANs", ctx), dropout_(ctx.config.get_double("hidden_dropout_prob")) {
  const layers::TransformerOptions o = transformer_options(ctx.config);
  const double std = ctx.config.get_double("initializer_range");
  const int64_t d = o.hidden_size, k = ctx.config.get_int("k_interests");
  item_embedding_ =
      register_parameter("item_embedding", torch::empty({ctx.n_items, d}).normal_(0.0, std));
  position_embedding_ =
      register_parameter("position_embedding", torch::empty({max_len_, d}).normal_(0.0, std));
  layer_norm_ = register_module(
      "layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
  const torch::Tensor theta_k = torch::randn({d, k}), theta_v = torch::randn({d, k});
  for (int64_t l = 0; l < o.n_layers; ++l)
    layers_.push_back(
        register_module("layer" + std::to_string(l), LightSANsLayer(o, theta_k, theta_v)));
  layers::init_transformer_weights(*this, std);  // Linears and LayerNorms; θ untouched
  to(ctx.device.device());
}

torch::Tensor LightSANs::encode(const data::Batch& batch) {
  // No mask: every one of the L columns (padding included) takes part.
  torch::Tensor x = layers::dropout(layer_norm_->forward(lookup(layers::item_seq(batch))), dropout_,
                                    is_training());
  const torch::Tensor positions = position_embedding_.narrow(0, 0, layers::item_seq(batch).size(1));
  for (auto& layer : layers_) x = layer->forward(x, positions);
  return layers::gather_last(x, layers::item_seq_len(batch));
}

RECBOLE_REGISTER_MODEL(LightSANs) {
  using config::Key;
  using config::KeyType;
  std::vector<config::KeyDecl> keys = transformer_keys();
  keys.push_back(Key("k_interests", KeyType::kInt)
                     .min(1)
                     .help("Interests the positions are pooled into for the item attention"));
  register_model({"LightSANs", "sequential", InputType::kNextItem,
                  "Low-rank decomposed self-attention: items attend to k pooled interests, "
                  "plus a decoupled position attention",
                  std::move(keys),
                  [](const ModelContext& ctx) { return std::make_shared<LightSANs>(ctx); }});
}

}  // namespace recbole::models

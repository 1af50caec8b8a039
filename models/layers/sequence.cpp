#include "models/layers/sequence.h"

#include <cmath>

#include "models/layers/attention.h"
#include "models/layers/dropout.h"
#include "models/layers/gelu.h"
#include "models/layers/residual_norm.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

torch::Tensor gather_last(const torch::Tensor& out, const torch::Tensor& len) {
  const torch::Tensor idx = (len - 1).view({-1, 1, 1}).expand({-1, 1, out.size(2)});
  return out.gather(1, idx).squeeze(1);
}

torch::Tensor attention_mask(const torch::Tensor& item_seq, bool causal) {
  const int64_t L = item_seq.size(1);
  torch::Tensor keep = (item_seq > 0).unsqueeze(1).unsqueeze(2);  // [B, 1, 1, L]
  if (causal) {
    const torch::Tensor lower =
        torch::ones({L, L}, item_seq.options().dtype(torch::kBool)).tril();  // j <= i
    keep = keep & lower.view({1, 1, L, L});
  }
  return torch::where(keep, torch::zeros({}, item_seq.options().dtype(torch::kFloat32)),
                      torch::full({}, -10000.0, item_seq.options().dtype(torch::kFloat32)));
}

torch::Tensor activation(const torch::Tensor& x, const std::string& name) {
  if (name == "gelu") return layers::gelu(x);  // the exact erf form
  if (name == "relu") return torch::relu(x);
  if (name == "swish") return x * torch::sigmoid(x);
  if (name == "tanh") return torch::tanh(x);
  if (name == "sigmoid") return torch::sigmoid(x);
  throw ConfigError("hidden_act: expected gelu, relu, swish, tanh or sigmoid, got \"" + name +
                    "\"");
}

void TransformerOptions::check_heads() const {
  if (n_heads < 1 || hidden_size % n_heads != 0)
    throw ConfigError("n_heads: hidden_size " + std::to_string(hidden_size) +
                      " must be a multiple of n_heads " + std::to_string(n_heads));
}

TransformerLayerImpl::TransformerLayerImpl(const TransformerOptions& o) : o_(o) {
  o.check_heads();
  const int64_t d = o.hidden_size;
  qkv_ = register_module("qkv", torch::nn::Linear(d, 3 * d));
  out_ = register_module("out", torch::nn::Linear(d, d));
  ln_attn_ = register_module(
      "ln_attn", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
  ff1_ = register_module("ff1", torch::nn::Linear(d, o.inner_size));
  ff2_ = register_module("ff2", torch::nn::Linear(o.inner_size, d));
  ln_ff_ = register_module(
      "ln_ff", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
}

torch::Tensor TransformerLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t dh = o_.hidden_size / o_.n_heads;
  const torch::Tensor ctx =
      attention_context(qkv_->forward(x), mask, o_.n_heads, 1.0 / std::sqrt(double(dh)),
                        o_.attn_dropout, is_training());
  const torch::Tensor a = residual_norm(out_->forward(ctx), x, ln_attn_->weight, ln_attn_->bias,
                                        o_.layer_norm_eps, o_.hidden_dropout, is_training());
  const torch::Tensor f = ff2_->forward(activation(ff1_->forward(a), o_.hidden_act));
  return residual_norm(f, a, ln_ff_->weight, ln_ff_->bias, o_.layer_norm_eps, o_.hidden_dropout,
                       is_training());
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerOptions& o) {
  for (int64_t l = 0; l < o.n_layers; ++l)
    layers_.push_back(register_module("layer" + std::to_string(l), TransformerLayer(o)));
}

torch::Tensor TransformerEncoderImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor h = x;
  for (auto& layer : layers_) h = layer->forward(h, mask);
  return h;
}

void init_transformer_weights(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  auto visit = [&](torch::nn::Module& m) {
    if (auto* linear = m.as<torch::nn::Linear>()) {
      torch::nn::init::normal_(linear->weight, 0.0, std);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* ln = m.as<torch::nn::LayerNorm>()) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
    }
  };
  visit(module);
  for (auto& m : module.modules(/*include_self=*/false)) visit(*m);
}

}  // namespace recbole::models::layers

#include "models/context/eulernet.h"

#include <tuple>
#include <utility>

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

EulerLayerImpl::EulerLayerImpl(int64_t n_in, int64_t n_out, int64_t width, double drop_ex,
                               double drop_im, bool apply_norm)
    : n_out_(n_out), width_(width), apply_norm_(apply_norm) {
  // Nearly one-hot columns: each output order starts close to one input field.
  omega_ = register_parameter("omega", torch::softmax(torch::randn({n_in, n_out}) / 0.01, 0));
  bias_lambda_ = register_parameter("bias_lambda", torch::randn({1, width, n_out}) * 0.01);
  bias_theta_ = register_parameter("bias_theta", torch::randn({1, width, n_out}) * 0.01);
  implicit_ = register_module("implicit", torch::nn::Linear(n_in * width, n_out * width));
  {
    torch::NoGradGuard no_grad;
    implicit_->weight.normal_(0, 0.1);
    implicit_->bias.zero_();
  }
  drop_ex_ = drop_ex;
  drop_im_ = drop_im;
  norm_r_ = register_module("norm_r", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  norm_p_ = register_module("norm_p", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
}

std::pair<torch::Tensor, torch::Tensor> EulerLayerImpl::forward(const torch::Tensor& r,
                                                                const torch::Tensor& p) {
  const int64_t b = r.size(0);
  // Explicit part, in polar form: [B, d, n_in] × Ω → [B, d, n_out] → [B, n_out, d].
  torch::Tensor lambda = 0.5 * torch::log(r * r + p * p + 1e-8);
  torch::Tensor theta = torch::atan2(p, r);
  lambda = (layers::dropout(lambda.transpose(1, 2), drop_ex_, is_training()).matmul(omega_) +
            bias_lambda_)
               .transpose(1, 2);
  theta =
      (layers::dropout(theta.transpose(1, 2), drop_ex_, is_training()).matmul(omega_) + bias_theta_)
          .transpose(1, 2);
  torch::Tensor modulus = torch::exp(lambda);
  // Implicit part: one Linear for the real and the imaginary side.
  const auto implicit = [&](const torch::Tensor& x) {
    return torch::relu(implicit_->forward(layers::dropout(x, drop_im_, is_training()).flatten(1)))
        .view({b, n_out_, width_});
  };
  torch::Tensor out_r = implicit(r) + modulus * torch::cos(theta);
  torch::Tensor out_p = implicit(p) + modulus * torch::sin(theta);
  if (apply_norm_) {
    out_r = norm_r_->forward(out_r);
    out_p = norm_p_->forward(out_p);
  }
  return {out_r, out_p};
}

EulerNet::EulerNet(const ModelContext& ctx)
    : ContextModel("EulerNet", ctx), reg_weight_(keys::reg_weight().get(ctx.config)) {
  mu_ = register_parameter("mu", torch::ones({1, num_fields_, 1}));
  int64_t n = num_fields_;
  for (int64_t order : ctx.config.get_int_list("order_list")) {
    layers_.push_back(register_module(
        "layer" + std::to_string(layers_.size()),
        EulerLayer(n, order, embedding_size_, ctx.config.get_double("drop_ex"),
                   ctx.config.get_double("drop_im"), ctx.config.get_bool("apply_norm"))));
    n = order;
  }
  output_ = register_module("output", torch::nn::Linear(n * embedding_size_, 1));
  {
    torch::NoGradGuard no_grad;
    output_->weight.normal_(0, 0.01);
    output_->bias.zero_();
  }
  finish(/*init_linears=*/false);
}

torch::Tensor EulerNet::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);  // [B, F, d]
  torch::Tensor r = mu_ * torch::cos(e), p = mu_ * torch::sin(e);
  for (auto& layer : layers_) std::tie(r, p) = layer->forward(r, p);
  return (output_->forward(r.flatten(1)) + output_->forward(p.flatten(1))).squeeze(1);
}

torch::Tensor EulerNet::regularizer() {
  if (reg_weight_ == 0) return {};
  torch::Tensor reg = mu_.norm();
  for (auto& layer : layers_)
    for (const torch::Tensor& t : layer->parameters()) reg = reg + t.norm();
  for (const torch::Tensor& t : output_->parameters()) reg = reg + t.norm();
  return reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(EulerNet) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"EulerNet",
       "context",
       InputType::kPointwise,
       "EulerNet: feature interactions of any order as complex features in polar form, with an "
       "implicit (Linear) part beside each layer",
       {keys::embedding_size().decl("Width of the field embeddings"),
        layers::sizes_key("order_list").help("Widths (in fields) of the Euler interaction layers"),
        layers::probability_key("drop_ex").help("Dropout on the explicit part's input, in [0, 1)"),
        layers::probability_key("drop_im").help("Dropout on the implicit part's input, in [0, 1)"),
        Key("apply_norm", KeyType::kBool).help("LayerNorm on each layer's outputs"),
        keys::reg_weight().decl(
            "Weight of Σ‖θ‖ over the non-embedding parameters (added once per batch)")},
       [](const ModelContext& ctx) { return std::make_shared<EulerNet>(ctx); }});
}

}  // namespace recbole::models

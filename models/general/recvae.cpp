#include "models/general/recvae.h"

#include <cmath>
#include <string>

#include "models/layers/autoencoder.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {
namespace {

constexpr double kLayerNormEps = 0.1;
constexpr double kLogvarUniform = 10.0;  // the wide component N(0, e^10) of the prior

// log N(z; mu, e^logvar) per element.
torch::Tensor log_norm_pdf(const torch::Tensor& z, const torch::Tensor& mu,
                           const torch::Tensor& logvar) {
  return -0.5 * (logvar + std::log(2 * M_PI) + (z - mu).pow(2) / logvar.exp());
}

torch::Tensor swish(const torch::Tensor& x) { return x * torch::sigmoid(x); }

}  // namespace

RecVaeEncoderImpl::RecVaeEncoderImpl(int64_t n_items, int64_t hidden, int64_t latent) {
  for (int k = 0; k < 5; ++k) {
    const std::string id = std::to_string(k + 1);
    fc_.push_back(register_module("fc" + id, torch::nn::Linear(k == 0 ? n_items : hidden, hidden)));
    ln_.push_back(register_module(
        "ln" + id, torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(kLayerNormEps))));
  }
  fc_mu_ = register_module("fc_mu", torch::nn::Linear(hidden, latent));
  fc_logvar_ = register_module("fc_logvar", torch::nn::Linear(hidden, latent));
}

std::pair<torch::Tensor, torch::Tensor> RecVaeEncoderImpl::forward(const torch::Tensor& rows,
                                                                   double dropout) {
  torch::Tensor x = layers::normalized_dropout(rows, dropout, is_training());
  // Each layer adds every earlier layer's output to its pre-activation (dense residuals).
  torch::Tensor h = ln_[0]->forward(swish(fc_[0]->forward(x)));
  torch::Tensor residual = h;
  for (size_t k = 1; k < fc_.size(); ++k) {
    h = ln_[k]->forward(swish(fc_[k]->forward(h) + residual));
    residual = residual + h;
  }
  return {fc_mu_->forward(h), fc_logvar_->forward(h)};
}

RecVAE::RecVAE(const ModelContext& ctx)
    : Model("RecVAE", ctx),
      dropout_prob_(keys::dropout_prob().get(ctx.config)),
      beta_(ctx.config.get_double("beta")),
      gamma_(ctx.config.get_double("gamma")),
      mixture_weights_(ctx.config.get_double_list("mixture_weights")),
      n_enc_epochs_(ctx.config.get_int("n_enc_epochs")),
      n_dec_epochs_(ctx.config.get_int("n_dec_epochs")) {
  const int64_t hidden = ctx.config.get_int("hidden_dimension");
  const int64_t latent = ctx.config.get_int("latent_dimension");
  encoder_ = register_module("encoder", RecVaeEncoder(ctx.n_items, hidden, latent));
  encoder_old_ = register_module("encoder_old", RecVaeEncoder(ctx.n_items, hidden, latent));
  decoder_ = register_module("decoder", torch::nn::Linear(latent, ctx.n_items));
  // Over everything, the old encoder included: until the first update_prior it is an
  // independent random network, as in RecBole.
  for (torch::nn::Module* m : {static_cast<torch::nn::Module*>(encoder_.get()),
                               static_cast<torch::nn::Module*>(encoder_old_.get()),
                               static_cast<torch::nn::Module*>(decoder_.get())})
    layers::initialize(*m, layers::Init::kXavierNormal);
  for (auto& p : encoder_old_->parameters()) p.set_requires_grad(false);
  to(ctx.device.device());
}

void RecVAE::update_prior() {
  torch::NoGradGuard no_grad;
  const auto from = encoder_->named_parameters();
  for (auto& p : encoder_old_->named_parameters()) p.value().copy_(from[p.key()]);
}

torch::Tensor RecVAE::log_prior(const torch::Tensor& rows, const torch::Tensor& z) {
  auto [mu_old, logvar_old] = encoder_old_->forward(rows, 0.0);
  const torch::Tensor zero = torch::zeros_like(z);
  const torch::Tensor stnd = log_norm_pdf(z, zero, zero);
  const torch::Tensor post = log_norm_pdf(z, mu_old, logvar_old);
  const torch::Tensor unif = log_norm_pdf(z, zero, torch::full_like(z, kLogvarUniform));
  const torch::Tensor gaussians =
      torch::stack({stnd + std::log(mixture_weights_[0]), post + std::log(mixture_weights_[1]),
                    unif + std::log(mixture_weights_[2])},
                   -1);
  return torch::logsumexp(gaussians, -1);
}

torch::Tensor RecVAE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  auto [mu, logvar] = encoder_->forward(rows, encoder_phase_ ? dropout_prob_ : 0.0);
  const torch::Tensor z = layers::reparameterize(mu, logvar, 0.01, is_training());
  const torch::Tensor logits = decoder_->forward(z);
  // Per-user KL weight: proportional to the row's size (gamma), or the constant beta.
  const torch::Tensor kl_weight =
      gamma_ != 0 ? gamma_ * rows.sum(1) : torch::full({rows.size(0)}, beta_, rows.options());
  const torch::Tensor mll = (torch::log_softmax(logits, 1) * rows).sum(1).mean();
  const torch::Tensor kld =
      ((log_norm_pdf(z, mu, logvar) - log_prior(rows, z)).sum(1) * kl_weight).mean();
  return -(mll - kld);
}

torch::Tensor RecVAE::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  auto [mu, logvar] = encoder_->forward(rows, 0.0);
  return decoder_->forward(layers::reparameterize(mu, logvar, 0.01, is_training()));
}

void RecVAE::on_pass_start(int64_t pass) {
  if (pass == n_enc_epochs_) update_prior();
  encoder_phase_ = pass < n_enc_epochs_;
}

std::vector<std::vector<torch::Tensor>> RecVAE::optimizer_groups() {
  return {encoder_->parameters(), decoder_->parameters()};
}

torch::Tensor RecVAE::train_step(const data::Batch& batch, TrainStep& step) {
  torch::optim::Optimizer& optimizer = step.optimizer(encoder_phase_ ? 0 : 1);
  optimizer.zero_grad();
  torch::Tensor loss = calculate_loss(batch);
  device_manager().check(loss, name(), "loss");
  loss.backward();
  step.finish_gradients();
  optimizer.step();
  // RecBole's RecVAETrainer reports the decoder passes' loss only.
  return encoder_phase_ ? torch::zeros_like(loss) : loss.detach();
}

void RecVAE::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "encoder_phase", encoder_phase_);
}

void RecVAE::load_training_state(torch::serialize::InputArchive& archive) {
  encoder_phase_ = layers::read_int(archive, "encoder_phase") != 0;
}

RECBOLE_REGISTER_MODEL(RecVAE) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"RecVAE",
       "general",
       InputType::kUserRows,
       "VAE of user rows with a composite prior; alternating encoder and decoder passes",
       {Key("hidden_dimension", KeyType::kInt).min(1).help("Width of the encoder's dense layers"),
        Key("latent_dimension", KeyType::kInt).min(1).help("Size of the latent code"),
        keys::dropout_prob().decl("Dropout on the normalised input rows (encoder "
                                  "passes)"),
        Key("beta", KeyType::kFloat).min(0).help("Constant KL weight, used when gamma is 0"),
        Key("gamma", KeyType::kFloat)
            .min(0)
            .help("KL weight per interaction of the user's row (0: use beta)"),
        Key("mixture_weights", KeyType::kFloatList)
            .above(0)
            .check([](const YAML::Node& v) {
              if (v.size() != 3) throw config::InvalidValue("", "a list of 3 floats > 0", v);
              return v;
            })
            .help("Weights of the prior's standard, old-posterior and wide components"),
        Key("n_enc_epochs", KeyType::kInt).min(1).help("Encoder passes per epoch"),
        Key("n_dec_epochs", KeyType::kInt).min(1).help("Decoder passes per epoch")},
       [](const ModelContext& ctx) { return std::make_shared<RecVAE>(ctx); }});
}

}  // namespace recbole::models

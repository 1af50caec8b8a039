#include "models/general/ldiffrec.h"

#include <algorithm>
#include <string>
#include <vector>

#include "models/layers/autoencoder.h"
#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/layers/training_state.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {
namespace {

constexpr double kEncoderDropout = 0.1;  // RecBole's AutoEncoder: fixed, not a key

// The code width: in_dims' first entry (RecBole reverses in_dims; its last is the code).
int64_t latent_width(const config::Config& c) {
  if (c.get_int("n_cate") != 1)
    throw ConfigError(c.source("n_cate") +
                      ": LDiffRec: n_cate: expected 1 (clustering the items by k-means over an "
                      "item_emb.npy, one VAE per cluster, is a RecBole feature not supported "
                      "yet), got " +
                      std::to_string(c.get_int("n_cate")));
  return c.get_int_list("in_dims").front();
}

}  // namespace

LDiffRec::LDiffRec(const ModelContext& ctx)
    : DiffRec(ctx, "LDiffRec", latent_width(ctx.config)),
      latent_(latent_width(ctx.config)),
      reparam_(ctx.config.get_bool("reparam")),
      lamda_(ctx.config.get_double("lamda")),
      anneal_cap_(ctx.config.get_double("anneal_cap")),
      vae_anneal_cap_(ctx.config.get_double("vae_anneal_cap")),
      anneal_steps_(ctx.config.get_int("anneal_steps")),
      vae_anneal_steps_(ctx.config.get_int("vae_anneal_steps")) {
  const config::Config& c = ctx.config;
  std::vector<int64_t> in_dims = c.get_int_list("in_dims");
  std::reverse(in_dims.begin(), in_dims.end());
  std::vector<int64_t> enc{ctx.n_items};
  enc.insert(enc.end(), in_dims.begin(), in_dims.end() - 1);
  enc.push_back(2 * latent_);
  std::vector<int64_t> dec{latent_};
  for (int64_t d : c.get_int_list("out_dims")) dec.push_back(d);
  dec.push_back(ctx.n_items);
  const std::string act = c.get_string("ae_act_func");
  encoder_ = register_module("encoder", layers::MLP(enc, 0.0, act, /*last_activation=*/true));
  decoder_ = register_module("decoder", layers::MLP(dec, 0.0, act, /*last_activation=*/false));
  layers::initialize(*encoder_, layers::Init::kXavierNormal);
  layers::initialize(*decoder_, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

LDiffRec::Code LDiffRec::encode(const torch::Tensor& rows) {
  const torch::Tensor input = layers::dropout(rows, kEncoderDropout, is_training());
  const torch::Tensor hidden = encoder_->forward(input);
  const torch::Tensor mu = hidden.narrow(1, 0, latent_);
  const torch::Tensor logvar = hidden.narrow(1, latent_, latent_);
  return {input, layers::reparameterize(mu, logvar, 1.0, is_training() && reparam_),
          layers::gaussian_kl(mu, logvar)};
}

torch::Tensor LDiffRec::decode(const torch::Tensor& latent) { return decoder_->forward(latent); }

double LDiffRec::diffusion_weight() const {
  const double u = static_cast<double>(updates_);
  return anneal_steps_ > 0 ? std::max((1.0 - u / anneal_steps_) * lamda_, anneal_cap_)
                           : std::max(lamda_, anneal_cap_);
}

double LDiffRec::kl_weight() const {
  return vae_anneal_steps_ > 0
             ? std::min(vae_anneal_cap_, static_cast<double>(updates_) / vae_anneal_steps_)
             : vae_anneal_cap_;
}

torch::Tensor LDiffRec::calculate_loss(const data::Batch& batch) {
  const Code code = encode(rows(batch));
  const DiffusionLoss diffusion = diffusion_loss(code.latent);
  const double lambda = diffusion_weight(), anneal = kl_weight();
  ++updates_;
  return lambda * diffusion.loss + layers::multinomial_nll(decode(diffusion.x0_hat), code.input) +
         anneal * code.kl;
}

torch::Tensor LDiffRec::full_sort_predict(const data::Batch& batch) {
  return decode(reverse_chain(encode(rows(batch)).latent));
}

void LDiffRec::save_training_state(torch::serialize::OutputArchive& archive) const {
  DiffRec::save_training_state(archive);
  layers::write_int(archive, "ldiffrec_updates", updates_);
}

void LDiffRec::load_training_state(torch::serialize::InputArchive& archive) {
  DiffRec::load_training_state(archive);
  updates_ = layers::read_int(archive, "ldiffrec_updates");
}

RECBOLE_REGISTER_MODEL(LDiffRec) {
  using config::Key;
  using config::KeyType;
  std::vector<config::KeyDecl> keys{
      Key("n_cate", KeyType::kInt)
          .min(1)
          .help("Item clusters, one VAE each (1 only: clustering is not supported yet)"),
      Key("reparam", KeyType::kBool).help("Sample the code in training (else its mean)"),
      layers::sizes_key("in_dims").help("Encoder sizes; the first is the code width"),
      Key("out_dims", KeyType::kIntList).min(1).help("Hidden sizes of the decoder"),
      Key("ae_act_func", KeyType::kString)
          .choices(layers::activation_names())
          .help("Activation of the encoder and decoder layers"),
      Key("lamda", KeyType::kFloat).min(0).help("Weight of the diffusion loss at the start"),
      Key("anneal_cap", KeyType::kFloat).min(0).help("Floor of the diffusion loss's weight"),
      Key("anneal_steps", KeyType::kInt)
          .min(0)
          .help("Batches over which the diffusion weight falls from lamda (0: constant)"),
      Key("vae_anneal_cap", KeyType::kFloat).min(0).help("Cap of the KL weight"),
      Key("vae_anneal_steps", KeyType::kInt)
          .min(0)
          .help("Batches over which the KL weight rises to its cap (0: the cap)")};
  for (config::KeyDecl& k : DiffRec::diffusion_keys()) keys.push_back(std::move(k));
  register_model({"LDiffRec", "general", InputType::kUserRows,
                  "Latent DiffRec: the diffusion runs on a VAE's code of the user row; scores "
                  "decode the reverse chain",
                  std::move(keys),
                  [](const ModelContext& ctx) { return std::make_shared<LDiffRec>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/multivae.h"

#include <algorithm>
#include <vector>

#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

MultiVAE::MultiVAE(const ModelContext& ctx)
    : Model("MultiVAE", ctx),
      latent_(ctx.config.get_int("latent_dimension") / 2),
      dropout_prob_(keys::dropout_prob().get(ctx.config)),
      anneal_(ctx.config.get_double("anneal_cap"), ctx.config.get_int("total_anneal_steps")) {
  const std::vector<int64_t> hidden = ctx.config.get_int_list("mlp_hidden_size");
  std::vector<int64_t> enc{ctx.n_items};
  enc.insert(enc.end(), hidden.begin(), hidden.end());
  enc.push_back(2 * latent_);
  std::vector<int64_t> dec{latent_};
  dec.insert(dec.end(), hidden.rbegin(), hidden.rend());
  dec.push_back(ctx.n_items);
  encoder_ = register_module("encoder", layers::MLP(enc, 0.0, "tanh", /*last_activation=*/false));
  decoder_ = register_module("decoder", layers::MLP(dec, 0.0, "tanh", /*last_activation=*/false));
  layers::initialize(*encoder_, layers::Init::kXavierNormal);
  layers::initialize(*decoder_, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

MultiVAE::Output MultiVAE::forward(const torch::Tensor& rows) {
  const torch::Tensor h =
      encoder_->forward(layers::normalized_dropout(rows, dropout_prob_, is_training()));
  Output out;
  out.mu = h.slice(1, 0, latent_);
  out.logvar = h.slice(1, latent_);
  const torch::Tensor z = layers::reparameterize(out.mu, out.logvar, 0.01, is_training());
  out.logits = decoder_->forward(z);
  return out;
}

torch::Tensor MultiVAE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  const Output out = forward(rows);
  const double anneal = anneal_.next();
  return layers::multinomial_nll(out.logits, rows) +
         anneal * layers::gaussian_kl(out.mu, out.logvar);
}

torch::Tensor MultiVAE::full_sort_predict(const data::Batch& batch) {
  return forward(layers::user_rows(batch, train_, device_manager())).logits;
}

void MultiVAE::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "kl_anneal_count", anneal_.count());
}

void MultiVAE::load_training_state(torch::serialize::InputArchive& archive) {
  anneal_.set_count(layers::read_int(archive, "kl_anneal_count"));
}

RECBOLE_REGISTER_MODEL(MultiVAE) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"MultiVAE",
       "general",
       InputType::kUserRows,
       "Variational autoencoder of user rows with a multinomial likelihood",
       {Key("mlp_hidden_size", KeyType::kIntList)
            .min(1)
            .help("Hidden layer sizes of the encoder "
                  "(reversed for the decoder)"),
        Key("latent_dimension", KeyType::kInt)
            .min(2)
            .help("Encoder output size: μ and logvar, latent_dimension / 2 each"),
        keys::dropout_prob().decl("Dropout on the normalised input rows"),
        Key("anneal_cap", KeyType::kFloat).min(0).help("Largest weight of the KL term"),
        Key("total_anneal_steps", KeyType::kInt)
            .min(0)
            .help("Training batches over which the KL weight grows to anneal_cap (0: always "
                  "anneal_cap)")},
       [](const ModelContext& ctx) { return std::make_shared<MultiVAE>(ctx); }});
}

}  // namespace recbole::models

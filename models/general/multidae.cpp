#include "models/general/multidae.h"

#include <vector>

#include "models/layers/autoencoder.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

MultiDAE::MultiDAE(const ModelContext& ctx)
    : Model("MultiDAE", ctx), dropout_prob_(keys::dropout_prob().get(ctx.config)) {
  const std::vector<int64_t> hidden = ctx.config.get_int_list("mlp_hidden_size");
  const int64_t latent = ctx.config.get_int("latent_dimension");
  std::vector<int64_t> enc{ctx.n_items};
  enc.insert(enc.end(), hidden.begin(), hidden.end());
  enc.push_back(latent);
  std::vector<int64_t> dec{latent};
  dec.insert(dec.end(), hidden.rbegin(), hidden.rend());
  dec.push_back(ctx.n_items);
  // RecBole builds the encoder with MLPLayers (tanh after the code too), the decoder without.
  encoder_ = register_module("encoder", layers::MLP(enc, 0.0, "tanh", /*last_activation=*/true));
  decoder_ = register_module("decoder", layers::MLP(dec, 0.0, "tanh", /*last_activation=*/false));
  layers::initialize(*encoder_, layers::Init::kXavierNormal);
  layers::initialize(*decoder_, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

torch::Tensor MultiDAE::forward(const torch::Tensor& rows) {
  return decoder_->forward(
      encoder_->forward(layers::normalized_dropout(rows, dropout_prob_, is_training())));
}

torch::Tensor MultiDAE::calculate_loss(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  return layers::multinomial_nll(forward(rows), rows);
}

torch::Tensor MultiDAE::full_sort_predict(const data::Batch& batch) {
  return forward(layers::user_rows(batch, train_, device_manager()));
}

RECBOLE_REGISTER_MODEL(MultiDAE) {
  using config::Key;
  using config::KeyType;
  register_model({"MultiDAE",
                  "general",
                  InputType::kUserRows,
                  "Denoising autoencoder of user rows with a multinomial likelihood",
                  {Key("mlp_hidden_size", KeyType::kIntList)
                       .min(1)
                       .help("Hidden layer sizes of the encoder "
                             "(reversed for the decoder)"),
                   Key("latent_dimension", KeyType::kInt).min(1).help("Size of the code"),
                   keys::dropout_prob().decl("Dropout on the normalised input rows")},
                  [](const ModelContext& ctx) { return std::make_shared<MultiDAE>(ctx); }});
}

}  // namespace recbole::models

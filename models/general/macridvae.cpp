#include "models/general/macridvae.h"

#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/layers/training_state.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {
namespace {

namespace F = torch::nn::functional;

torch::Tensor unit_rows(const torch::Tensor& x) {
  return F::normalize(x, F::NormalizeFuncOptions().dim(1));
}

}  // namespace

MacridVAE::MacridVAE(const ModelContext& ctx)
    : Model("MacridVAE", ctx),
      d_(keys::embedding_size().get(ctx.config)),
      kfac_(ctx.config.get_int("kfac")),
      dropout_prob_(keys::dropout_prob().get(ctx.config)),
      tau_(ctx.config.get_double("tau")),
      std_(ctx.config.get_double("std")),
      nogb_(ctx.config.get_bool("nogb")),
      reg_weights_(ctx.config.get_double_list("reg_weights")),
      anneal_(ctx.config.get_double("anneal_cap"), ctx.config.get_int("total_anneal_steps")) {
  const std::vector<int64_t> hidden = ctx.config.get_int_list("encoder_hidden_size");
  std::vector<int64_t> enc{ctx.n_items};
  enc.insert(enc.end(), hidden.begin(), hidden.end());
  enc.push_back(2 * d_);
  encoder_ = register_module("encoder", layers::MLP(enc, 0.0, "tanh", /*last_activation=*/false));
  layers::initialize(*encoder_, layers::Init::kXavierNormal);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d_, layers::Init::kXavierNormal);
  k_embedding_ = register_table("k_embedding", kfac_, d_, layers::Init::kXavierNormal);
  to(ctx.device.device());
}

torch::Tensor MacridVAE::assignments(const torch::Tensor& items_normed) const {
  const torch::Tensor logits = torch::matmul(items_normed, unit_rows(k_embedding_).t()) / tau_;
  if (nogb_ || !is_training()) return torch::softmax(logits, 1);
  return F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(1).hard(false).dim(1));
}

MacridVAE::Output MacridVAE::forward(const torch::Tensor& rows) {
  const torch::Tensor items = unit_rows(item_embedding_);
  const torch::Tensor x = layers::normalized_dropout(rows, dropout_prob_, is_training());
  const torch::Tensor cates = assignments(items);  // [n_items, kfac]
  Output out;
  torch::Tensor probs;
  for (int64_t k = 0; k < kfac_; ++k) {
    const torch::Tensor cates_k = cates.select(1, k).unsqueeze(0);  // [1, n_items]
    const torch::Tensor h = encoder_->forward(x * cates_k);
    const torch::Tensor mu = unit_rows(h.slice(1, 0, d_));
    const torch::Tensor logvar = h.slice(1, d_);
    const torch::Tensor z = unit_rows(layers::reparameterize(mu, logvar, std_, is_training()));
    const torch::Tensor probs_k = torch::exp(torch::matmul(z, items.t()) / tau_) * cates_k;
    probs = k == 0 ? probs_k : probs + probs_k;
    out.mu.push_back(mu);
    out.logvar.push_back(logvar);
  }
  out.logits = torch::log(probs);
  return out;
}

torch::Tensor MacridVAE::calculate_loss(const data::Batch& batch) {
  const double anneal = anneal_.next();
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  const Output out = forward(rows);
  torch::Tensor kl = torch::zeros({}, rows.options());
  for (const torch::Tensor& logvar : out.logvar)
    kl = kl - 0.5 * (1 + logvar - logvar.exp()).sum(1).mean();
  torch::Tensor loss = layers::multinomial_nll(out.logits, rows) + anneal * kl;
  if (reg_weights_[0] != 0 || reg_weights_[1] != 0) {
    loss = loss + reg_weights_[0] * (item_embedding_.norm() + k_embedding_.norm());
    for (const auto& linear : encoder_->linears())
      loss = loss + reg_weights_[1] * linear->weight.norm();
  }
  return loss;
}

torch::Tensor MacridVAE::full_sort_predict(const data::Batch& batch) {
  return forward(layers::user_rows(batch, train_, device_manager())).logits;
}

void MacridVAE::save_training_state(torch::serialize::OutputArchive& archive) const {
  layers::write_int(archive, "kl_anneal_count", anneal_.count());
}

void MacridVAE::load_training_state(torch::serialize::InputArchive& archive) {
  anneal_.set_count(layers::read_int(archive, "kl_anneal_count"));
}

RECBOLE_REGISTER_MODEL(MacridVAE) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"MacridVAE",
       "general",
       InputType::kUserRows,
       "Disentangled VAE of user rows over kfac item concepts",
       {keys::embedding_size().decl("Latent and item embedding size"),
        keys::dropout_prob().decl("Dropout on the normalised input rows"),
        Key("kfac", KeyType::kInt).min(1).help("Number of concepts (prototypes)"),
        Key("nogb", KeyType::kBool)
            .help("Softmax concept assignment in training instead of a "
                  "Gumbel-softmax sample"),
        Key("std", KeyType::kFloat).min(0).help("Std of the reparameterisation noise"),
        Key("encoder_hidden_size", KeyType::kIntList).min(1).help("Hidden sizes of the encoder"),
        Key("tau", KeyType::kFloat).above(0).help("Temperature of the cosine logits"),
        Key("anneal_cap", KeyType::kFloat).min(0).help("Largest weight of the KL term"),
        Key("total_anneal_steps", KeyType::kInt)
            .min(0)
            .help("Training batches over which the KL weight grows to anneal_cap (0: always "
                  "anneal_cap)"),
        Key("reg_weights", KeyType::kFloatList)
            .min(0)
            .check([](const YAML::Node& v) {
              if (v.size() != 2) throw config::InvalidValue("", "a list of 2 floats >= 0", v);
              return v;
            })
            .help("Weights of the embedding norms and of the encoder weight norms")},
       [](const ModelContext& ctx) { return std::make_shared<MacridVAE>(ctx); }});
}

}  // namespace recbole::models

#include "models/general/gcmc.h"

#include <cmath>

#include <torch/torch.h>

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace {

// [rows, cols] uniform in ±√(2 / (fan_in + fan_out)), on the CPU from the seeded generator.
torch::Tensor glorot_like(int64_t rows, int64_t cols, int64_t fan_in, int64_t fan_out) {
  const double range = std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return torch::empty({rows, cols}).uniform_(-range, range);
}

}  // namespace

GCMC::GCMC(const ModelContext& ctx)
    : CachedFactorModel("GCMC", ctx),
      adjacency_(layers::symmetric_normalized(layers::bipartite_adjacency(ctx.train)),
                 /*symmetric=*/true, ctx.device),
      dropout_prob_(keys::dropout_prob().get(ctx.config)) {
  const int64_t n = ctx.n_users + ctx.n_items;
  const int64_t hidden = ctx.config.get_int("gcn_output_dim");
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t bases = ctx.config.get_int("num_basis_functions");
  const int64_t classes = ctx.config.get_int("class_num");
  // Drawn on the CPU in this order, so a seed gives the same weights on every device.
  torch::Tensor w = glorot_like(n, hidden, n, hidden);
  torch::Tensor dense = glorot_like(d, hidden, hidden, d);
  torch::Tensor basis = torch::empty({bases, d, d});
  {
    torch::NoGradGuard no_grad;
    for (int64_t s = 0; s < bases; ++s) torch::nn::init::orthogonal_(basis[s], 1.1);
  }
  torch::Tensor classifier = glorot_like(classes, bases, bases, classes);
  encoder_weight_ = register_parameter("encoder_weight", ctx.device.place(w));
  dense_weight_ = register_parameter("dense_weight", ctx.device.place(dense));
  basis_ = register_parameter("decoder_basis", ctx.device.place(basis));
  classifier_ = register_parameter("decoder_weight", ctx.device.place(classifier));
}

std::pair<torch::Tensor, torch::Tensor> GCMC::encode() const {
  torch::Tensor h = encoder_weight_;
  if (is_training() && dropout_prob_ > 0) {
    // One draw per node on the CPU generator (the same mask on every device).
    const torch::Tensor keep =
        torch::bernoulli(torch::full({h.size(0)}, 1.0 - dropout_prob_, torch::kFloat32))
            .div_(1.0 - dropout_prob_);
    h = h * device_manager().place(keep).unsqueeze(1);
  }
  torch::Tensor z = torch::relu(layers::spmm(adjacency_, h));
  z = layers::dropout(z, dropout_prob_, is_training());
  z = torch::matmul(z, dense_weight_.t());
  return {z.slice(0, 0, n_users()), z.slice(0, n_users())};
}

torch::Tensor GCMC::logits(const torch::Tensor& user_table, const torch::Tensor& item_table,
                           const torch::Tensor& users, const torch::Tensor& items) const {
  const torch::Tensor u = user_table.index_select(0, users);  // [B, d]
  const torch::Tensor v = item_table.index_select(0, items);  // [B, d]
  // t[b, s] = u_b Q_s v_bᵀ
  const torch::Tensor t = (torch::einsum("bd,sde->bse", {u, basis_}) * v.unsqueeze(1)).sum(2);
  return torch::matmul(t, classifier_.t());
}

torch::Tensor GCMC::calculate_loss(const data::Batch& batch) {
  drop_factors();
  const auto [user_table, item_table] = encode();
  const torch::Tensor users = torch::cat({batch.users, batch.users});
  const torch::Tensor items = torch::cat({batch.items, batch.neg_items});
  const int64_t b = batch.users.size(0);
  const torch::Tensor target = torch::cat({torch::ones({b}, device_manager().long_options()),
                                           torch::zeros({b}, device_manager().long_options())});
  return torch::nn::functional::cross_entropy(logits(user_table, item_table, users, items), target);
}

std::pair<torch::Tensor, torch::Tensor> GCMC::evaluation_factors() {
  auto [users, items] = encode();
  // Class-1 logit = Σ_s C[1, s] · u Q_s vᵀ = (u M) · v with M = Σ_s C[1, s] Q_s.
  const torch::Tensor m = (classifier_[1].view({-1, 1, 1}) * basis_).sum(0);
  return {torch::matmul(users, m).contiguous(), items.contiguous()};
}

RECBOLE_REGISTER_MODEL(GCMC) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"GCMC",
       "general",
       InputType::kPairwise,
       "Graph convolutional matrix completion: one-hot graph encoder, bilinear decoder",
       {Key("accum", KeyType::kString)
            .choices({"stack", "sum"})
            .help("How supports combine (identical with the single support of implicit data)"),
        Key("gcn_output_dim", KeyType::kInt).min(1).help("Width of the graph convolution output"),
        keys::embedding_size().decl("Width of the dense layer output"),
        keys::dropout_prob().decl(
            "Node dropout on the one-hot inputs and dropout after the convolution"),
        Key("sparse_feature", KeyType::kBool)
            .help("One-hot features as sparse tensors in RecBole; here always row lookups"),
        Key("class_num", KeyType::kInt)
            .min(2)
            .help("Decoder classes (class 1 = observed, class 0 = sampled negative)"),
        Key("num_basis_functions", KeyType::kInt).min(1).help("Bilinear bases Q_s of the decoder")},
       [](const ModelContext& ctx) { return std::make_shared<GCMC>(ctx); }});
}

}  // namespace recbole::models

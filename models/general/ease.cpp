#include "models/general/ease.h"

#include "models/general/fitted_support.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

EASE::EASE(const ModelContext& ctx) : Model("EASE", ctx) {
  reg_weight_ = keys::reg_weight().get(ctx.config);
  // An empty placeholder: the n² matrix is allocated by fit() (or by loading a checkpoint), after
  // the memory check.
  b_ = register_buffer("item_similarity",
                       torch::zeros({0, ctx.n_items}, ctx.device.float_options()));
}

double EASE::fit_bytes(int64_t n_items) {
  return 16.0 * static_cast<double>(n_items) * static_cast<double>(n_items);
}

void EASE::fit() {
  const int64_t n = n_items();
  require_memory(
      "EASE", fit_bytes(n),
      "2 × n_items² float64: G and its Cholesky factor, then the factor and G⁻¹; n_items = " +
          std::to_string(n));
  // float64 keeps B accurate to float32 precision whatever the conditioning of G; G is
  // symmetric positive definite (reg_weight > 0), so Cholesky is the cheapest exact inverse.
  torch::Tensor g = item_gram(train_, torch::kFloat64);
  g.diagonal().add_(reg_weight_);
  torch::Tensor p;
  {
    torch::Tensor l;
    try {
      l = torch::linalg_cholesky(g);
    } catch (const c10::Error&) {
      // With reg_weight 0, G = XᵀX is singular whenever an item column is empty (the padding
      // item 0 always is) or items are linearly dependent.
      throw ConfigError("EASE: XᵀX + reg_weight · I is not positive definite with reg_weight " +
                        std::to_string(reg_weight_) +
                        "; expected reg_weight > 0 (RecBole's default is 250)");
    }
    g = torch::Tensor();
    p = torch::cholesky_inverse(l);
  }
  // B[:, j] = −P[:, j] / P[j, j]; diag(B) = 0.
  torch::Tensor b = p.div_(p.diagonal().neg().unsqueeze(0)).to(torch::kFloat32);
  p = torch::Tensor();
  b.diagonal().zero_();
  assign_buffer(b_, device_manager().place(b));
}

torch::Tensor EASE::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  if (b_.size(0) != n_items()) throw Error("EASE: full_sort_predict called before fit()");
  const std::vector<int64_t> u = to_vector(users);
  torch::Tensor x = device_manager().place(data::dense_rows(train_, u));
  return torch::matmul(x, b_);
}

RECBOLE_REGISTER_MODEL(EASE) {
  register_model(
      {"EASE",
       "general",
       InputType::kFitOnce,
       "Embarrassingly shallow autoencoder: closed-form item-item regression",
       {keys::reg_weight().decl("L2 weight added to the diagonal of the item Gram matrix")},
       [](const ModelContext& ctx) { return std::make_shared<EASE>(ctx); }});
}

}  // namespace recbole::models

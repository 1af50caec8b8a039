#include "models/general/admmslim.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "models/general/fitted_support.h"
#include "recbole/utils/thread_pool.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

ADMMSLIM::ADMMSLIM(const ModelContext& ctx) : Model("ADMMSLIM", ctx) {
  lambda1_ = ctx.config.get_double("lambda1");
  lambda2_ = ctx.config.get_double("lambda2");
  alpha_ = ctx.config.get_double("alpha");
  rho_ = ctx.config.get_double("rho");
  iterations_ = ctx.config.get_int("k");
  positive_only_ = ctx.config.get_bool("positive_only");
  center_columns_ = ctx.config.get_bool("center_columns");
  c_ = register_buffer("item_similarity", torch::zeros({0, ctx.n_items}, ctx.device.float_options()));
  item_means_ = register_buffer("item_means", torch::zeros({ctx.n_items}, ctx.device.float_options()));
}

double ADMMSLIM::fit_bytes(int64_t n_items) {
  return 24.0 * static_cast<double>(n_items) * static_cast<double>(n_items);
}

void ADMMSLIM::fit() {
  const int64_t n = n_items();
  require_memory("ADMMSLIM", fit_bytes(n),
                 "6 × n_items² float32 for the ADMM iterates (P, B_aux, Γ, C, ρC − Γ, P·(ρC − Γ)); n_items = " + std::to_string(n));
  const double rows = static_cast<double>(n_users());
  const std::vector<int64_t> deg = train_.item_degrees();
  torch::Tensor mu64 = torch::tensor(deg, torch::kInt64).to(torch::kFloat64) / rows;

  torch::Tensor p, b_aux;
  {
    torch::Tensor g = item_gram(train_, torch::kFloat64);
    if (center_columns_) g.sub_(torch::outer(mu64, mu64).mul_(rows));
    torch::Tensor d = mu64.pow(alpha_).mul_(lambda2_).add_(rho_);
    g.diagonal().add_(d);
    torch::Tensor l = torch::linalg::cholesky(g);
    g = torch::Tensor();
    torch::Tensor p64 = torch::cholesky_inverse(l);
    l = torch::Tensor();
    // P·G = P·(G + D) − P·D = I − P·D: no product needed, and exact up to P's rounding.
    b_aux = p64.mul(d.neg().unsqueeze(0));
    b_aux.diagonal().add_(1.0);
    b_aux = b_aux.to(torch::kFloat32);
    p = p64.to(torch::kFloat32);
  }

  torch::Tensor gamma_m = torch::zeros({n, n}, torch::kFloat32);  // Γ
  torch::Tensor c = torch::zeros({n, n}, torch::kFloat32);
  torch::Tensor m = torch::zeros({n, n}, torch::kFloat32);   // ρC − Γ
  torch::Tensor pm = torch::zeros({n, n}, torch::kFloat32);  // P·(ρC − Γ); B̃ = B_aux + pm
  std::vector<float> gam(n);
  const float rho = static_cast<float>(rho_);
  const float thr = static_cast<float>(lambda1_ / rho_);
  const float* pp = p.data_ptr<float>();
  const float* ap = b_aux.data_ptr<float>();
  const float* pmp = pm.data_ptr<float>();
  float* gp = gamma_m.data_ptr<float>();
  float* cp = c.data_ptr<float>();
  float* mp = m.data_ptr<float>();
  const int64_t row_chunk = 64;
  const int64_t n_chunks = (n + row_chunk - 1) / row_chunk;

  // One pass per element computes B, C, Γ and the next ρC − Γ; the element loop has no branch
  // so that it vectorises.
  auto element_pass = [&](auto positive) {
    parallel_for(n_chunks, [&](int64_t chunk, int) {
      const int64_t r0 = chunk * row_chunk, r1 = std::min(n, r0 + row_chunk);
      for (int64_t i = r0; i < r1; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t e = i * n + j;
          const float b = ap[e] + pmp[e] - pp[e] * gam[j];
          const float v = b + gp[e] / rho;  // as RecBole rounds it
          const float a = std::max(std::fabs(v) - thr, 0.0f);
          const float cv = positive ? (v > 0.0f ? a : 0.0f) : std::copysign(a, v);
          gp[e] += rho * (b - cv);
          cp[e] = cv;
          mp[e] = rho * cv - gp[e];
        }
      }
    });
  };
  for (int64_t it = 0; it < iterations_; ++it) {
    if (it > 0) torch::mm_out(pm, p, m);  // at it = 0, C = Γ = 0
    for (int64_t j = 0; j < n; ++j) gam[j] = (ap[j * n + j] + pmp[j * n + j]) / (pp[j * n + j] + 1e-7f);
    if (positive_only_)
      element_pass(std::true_type{});
    else
      element_pass(std::false_type{});
  }
  assign_buffer(item_means_, device_manager().place(mu64.to(torch::kFloat32)));
  assign_buffer(c_, device_manager().place(c));
}

torch::Tensor ADMMSLIM::full_sort_predict(const torch::Tensor& users) {
  if (c_.size(0) != n_items()) throw Error("ADMMSLIM: full_sort_predict called before fit()");
  const std::vector<int64_t> u = to_vector(users);
  torch::Tensor x = device_manager().place(dense_history(train_, u));
  if (!center_columns_) return torch::matmul(x, c_);
  return torch::matmul(x - item_means_.unsqueeze(0), c_) + item_means_.unsqueeze(0);
}

void register_admmslim() {
  register_model("ADMMSLIM", "SLIM solved by ADMM (L1 + L2, optional positivity and centring)",
                 [](const ModelContext& ctx) { return std::make_shared<ADMMSLIM>(ctx); });
}

}  // namespace recbole::models

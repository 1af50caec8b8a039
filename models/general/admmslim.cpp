#include "models/general/admmslim.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/simd.h"
#include "models/general/fitted_support.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

ADMMSLIM::ADMMSLIM(const ModelContext& ctx) : Model("ADMMSLIM", ctx) {
  lambda1_ = ctx.config.get_double("lambda1");
  lambda2_ = ctx.config.get_double("lambda2");
  alpha_ = ctx.config.get_double("alpha");
  rho_ = ctx.config.get_double("rho");
  iterations_ = ctx.config.get_int("k");
  positive_only_ = ctx.config.get_bool("positive_only");
  center_columns_ = ctx.config.get_bool("center_columns");
  c_ = register_buffer("item_similarity",
                       torch::zeros({0, ctx.n_items}, ctx.device.float_options()));
  item_means_ =
      register_buffer("item_means", torch::zeros({ctx.n_items}, ctx.device.float_options()));
}

namespace {

// One ADMM step for row i of the item-item matrices, from B̃'s parts: B = B_aux + P·(ρC − Γ)
// − P·diag(γ) with B_aux = I − P·D; then C = soft_threshold(B + Γ/ρ, λ1/ρ) (clipped at 0 when
// positive_only), Γ += ρ(B − C), and the next ρC − Γ. C is stored only when c is not null.
// Branch-free so that it vectorises; the diagonal element (the δ_ii of B_aux) is redone after.
template <bool kPositive>
RECBOLE_INLINE float admm_element(float p, float pm, float d, float gam, float delta, float rho,
                                  float thr, float& g, float& m) {
  const float b = (delta - p * d) + pm - p * gam;
  const float v = b + g / rho;  // as RecBole rounds it
  const float a = std::max(std::fabs(v) - thr, 0.0f);
  const float cv = kPositive ? (v > 0.0f ? a : 0.0f) : std::copysign(a, v);
  g += rho * (b - cv);
  m = rho * cv - g;
  return cv;
}

template <bool kPositive>
RECBOLE_INLINE void admm_row_impl(int64_t i, int64_t n, const float* __restrict p,
                                  const float* __restrict pm, const float* __restrict d,
                                  const float* __restrict gam, float rho, float thr,
                                  float* __restrict g, float* __restrict m, float* __restrict c) {
  const float g_ii = g[i];
  if (c != nullptr) {
    for (int64_t j = 0; j < n; ++j)
      c[j] = admm_element<kPositive>(p[j], pm[j], d[j], gam[j], 0.0f, rho, thr, g[j], m[j]);
  } else {
    for (int64_t j = 0; j < n; ++j)
      admm_element<kPositive>(p[j], pm[j], d[j], gam[j], 0.0f, rho, thr, g[j], m[j]);
  }
  g[i] = g_ii;
  const float c_ii = admm_element<kPositive>(p[i], pm[i], d[i], gam[i], 1.0f, rho, thr, g[i], m[i]);
  if (c != nullptr) c[i] = c_ii;
}

RECBOLE_MULTIVERSION
void admm_row(bool positive, int64_t i, int64_t n, const float* p, const float* pm, const float* d,
              const float* gam, float rho, float thr, float* g, float* m, float* c) {
  if (positive)
    admm_row_impl<true>(i, n, p, pm, d, gam, rho, thr, g, m, c);
  else
    admm_row_impl<false>(i, n, p, pm, d, gam, rho, thr, g, m, c);
}

}  // namespace

double ADMMSLIM::fit_bytes(int64_t n_items) {
  return 20.0 * static_cast<double>(n_items) * static_cast<double>(n_items);
}

void ADMMSLIM::fit() {
  const int64_t n = n_items();
  require_memory(
      "ADMMSLIM", fit_bytes(n),
      "5 × n_items² float32 for the ADMM iterates (P, Γ, C, ρC − Γ, P·(ρC − Γ)); n_items = " +
          std::to_string(n));
  const double rows = static_cast<double>(n_users());
  const std::vector<int64_t> deg = train_.item_degrees();
  torch::Tensor mu64 = torch::tensor(deg, torch::kInt64).to(torch::kFloat64) / rows;

  torch::Tensor p;
  std::vector<float> dvec(static_cast<size_t>(n));  // D's diagonal
  {
    torch::Tensor g = item_gram(train_, torch::kFloat64);
    if (center_columns_) g.sub_(torch::outer(mu64, mu64).mul_(rows));
    torch::Tensor d = mu64.pow(alpha_).mul_(lambda2_).add_(rho_);
    g.diagonal().add_(d);
    torch::Tensor l = torch::linalg_cholesky(g);
    g = torch::Tensor();
    p = torch::cholesky_inverse(l).to(torch::kFloat32);
    const torch::Tensor d32 = d.to(torch::kFloat32).contiguous();
    std::copy(d32.data_ptr<float>(), d32.data_ptr<float>() + n, dvec.begin());
  }

  torch::Tensor gamma_m = torch::zeros({n, n}, torch::kFloat32);  // Γ
  torch::Tensor c = torch::zeros({n, n}, torch::kFloat32);
  torch::Tensor m = torch::zeros({n, n}, torch::kFloat32);   // ρC − Γ
  torch::Tensor pm = torch::zeros({n, n}, torch::kFloat32);  // P·(ρC − Γ)
  std::vector<float> gam(n);
  const float rho = static_cast<float>(rho_);
  const float thr = static_cast<float>(lambda1_ / rho_);
  const float* pp = p.data_ptr<float>();
  const float* dp = dvec.data();
  const float* pmp = pm.data_ptr<float>();
  float* gp = gamma_m.data_ptr<float>();
  float* cp = c.data_ptr<float>();
  float* mp = m.data_ptr<float>();
  const int64_t row_chunk = 64;

  // B_aux = P·G = P·(G + D) − P·D = I − P·D, so B̃ = B_aux + P·(ρC − Γ) needs no product and
  // no array of its own: element (i, j) of B_aux is δ_ij − P_ij·D_j.
  auto b_aux = [&](int64_t i, int64_t j) { return (i == j ? 1.0f : 0.0f) - pp[i * n + j] * dp[j]; };
  // C is only stored at the last iteration (the others need only ρC − Γ).
  auto element_pass = [&](bool last) {
    parallel_for_blocks(n, row_chunk, [&](int64_t, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        admm_row(positive_only_, i, n, pp + i * n, pmp + i * n, dp, gam.data(), rho, thr,
                 gp + i * n, mp + i * n, last ? cp + i * n : nullptr);
    });
  };
  // P·(ρC − Γ) as one single-threaded GEMM per worker over its share of P's rows. A
  // multi-threaded OpenBLAS GEMM leaves its threads spinning (OpenBLAS's thread timeout)
  // against the element pass that follows.
  BlasThreadsScope blas_threads(1);
  const int workers = ThreadPool::instance().threads();
  auto product = [&](int w) {
    const int64_t r0 = n * w / workers, r1 = n * (w + 1) / workers;
    if (r1 > r0) {
      torch::Tensor out = pm.narrow(0, r0, r1 - r0);
      torch::mm_out(out, p.narrow(0, r0, r1 - r0), m);
    }
  };
  for (int64_t it = 0; it < iterations_; ++it) {
    if (it > 0) ThreadPool::instance().run_per_worker(product);  // at it = 0, C = Γ = 0
    for (int64_t j = 0; j < n; ++j)
      gam[j] = (b_aux(j, j) + pmp[j * n + j]) / (pp[j * n + j] + 1e-7f);
    element_pass(it + 1 == iterations_);
  }
  assign_buffer(item_means_, device_manager().place(mu64.to(torch::kFloat32)));
  assign_buffer(c_, device_manager().place(c));
}

torch::Tensor ADMMSLIM::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  if (c_.size(0) != n_items()) throw Error("ADMMSLIM: full_sort_predict called before fit()");
  const std::vector<int64_t> u = to_vector(users);
  torch::Tensor x = device_manager().place(data::dense_rows(train_, u));
  if (!center_columns_) return torch::matmul(x, c_);
  return torch::matmul(x - item_means_.unsqueeze(0), c_) + item_means_.unsqueeze(0);
}

bool ADMMSLIM::score_item_weights(ItemWeights* weights) const {
  if (c_.size(0) != n_items()) return false;
  weights->dense = c_;
  if (center_columns_)
    weights->bias = item_means_ - torch::matmul(item_means_.unsqueeze(0), c_).squeeze(0);
  return true;
}

RECBOLE_REGISTER_MODEL(ADMMSLIM) {
  register_model(
      {"ADMMSLIM",
       "general",
       InputType::kFitOnce,
       "SLIM solved by ADMM (L1 + L2, optional positivity and centring)",
       {config::Key("lambda1", config::KeyType::kFloat).min(0).help("L1 regularisation weight"),
        config::Key("lambda2", config::KeyType::kFloat).min(0).help("L2 regularisation weight"),
        config::Key("alpha", config::KeyType::kFloat)
            .min(0)
            .help("Exponent of item popularity in the L2 weights"),
        config::Key("rho", config::KeyType::kFloat).above(0).help("ADMM penalty parameter"),
        config::Key("k", config::KeyType::kInt).min(1).help("ADMM iterations"),
        config::Key("positive_only", config::KeyType::kBool)
            .help("Clip negative item weights to zero"),
        config::Key("center_columns", config::KeyType::kBool)
            .help("Centre the columns of the interaction matrix")},
       [](const ModelContext& ctx) { return std::make_shared<ADMMSLIM>(ctx); }});
}

}  // namespace recbole::models

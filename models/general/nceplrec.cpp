#include "models/general/nceplrec.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "models/general/fitted_support.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

namespace {

using SparseRows = Eigen::SparseMatrix<double, Eigen::RowMajor>;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// [rows, cols] of independent N(0, 1) draws (Box–Muller on mt19937_64: the same numbers with
// any standard library, unlike std::normal_distribution).
Eigen::MatrixXd gaussian(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&rng] {  // in (0, 1]
    return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  };
  Eigen::MatrixXd g(rows, cols);
  double* p = g.data();
  const int64_t n = rows * cols;
  for (int64_t k = 0; k < n; k += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double t = 2.0 * M_PI * uniform();
    p[k] = r * std::cos(t);
    if (k + 1 < n) p[k + 1] = r * std::sin(t);
  }
  return g;
}

// The Q factor of a thin QR: orthonormal columns spanning a's, [rows, min(rows, cols)].
Eigen::MatrixXd thin_q(const Eigen::MatrixXd& a) {
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
  return qr.householderQ() * Eigen::MatrixXd::Identity(a.rows(), std::min(a.rows(), a.cols()));
}

// A float64 Eigen matrix as a [rows, cols] float32 CPU tensor.
torch::Tensor to_tensor(const Eigen::MatrixXd& m) {
  const RowMajorMatrix rows = m;
  return torch::from_blob(const_cast<double*>(rows.data()), {rows.rows(), rows.cols()},
                          torch::kFloat64)
      .to(torch::kFloat32);
}

// The largest rank the training split allows: D has min(n_users, n_items) singular values.
int64_t checked_rank(const config::Config& config, int64_t users, int64_t items) {
  const int64_t rank = config.get_int("rank");
  const int64_t most = std::min(users, items);
  if (rank > most)
    throw ConfigError(config.source("rank") + ": NCEPLRec key rank: " + std::to_string(rank) +
                      " singular vectors, but this dataset's training matrix has " +
                      std::to_string(users) + " user ids and " + std::to_string(items) +
                      " item ids (pad included); expected rank <= " + std::to_string(most));
  return rank;
}

}  // namespace

TruncatedSvd randomized_svd(const SparseRows& m, int64_t rank, uint64_t seed, int64_t n_oversamples,
                            int64_t n_iter) {
  const int64_t smaller = std::min<int64_t>(m.rows(), m.cols());
  if (rank < 1 || rank > smaller)
    throw Error("randomized_svd: rank " + std::to_string(rank) + " outside [1, " +
                std::to_string(smaller) + "]");
  if (n_iter < 0) n_iter = static_cast<double>(rank) < 0.1 * static_cast<double>(smaller) ? 7 : 4;
  // As sklearn: work on the matrix with at least as many rows as columns.
  const bool transpose = m.rows() < m.cols();
  const SparseRows a = transpose ? SparseRows(m.transpose()) : m;
  const SparseRows at = a.transpose();

  // Range finder: an orthonormal basis of a's range from a Gaussian sketch, power iterations
  // with a QR after every product so that small singular directions survive in floating point.
  Eigen::MatrixXd q = gaussian(a.cols(), rank + n_oversamples, seed);
  for (int64_t it = 0; it < n_iter; ++it) {
    q = thin_q(a * q);
    q = thin_q(at * q);
  }
  q = thin_q(a * q);  // [a.rows, k]

  const Eigen::MatrixXd b = (at * q).transpose();  // Qᵀa, [k, a.cols]
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(b, Eigen::ComputeThinU | Eigen::ComputeThinV);
  TruncatedSvd out;
  out.singular_values = svd.singularValues().head(rank);
  // m = aᵀ when transposed: m's right vectors are a's left vectors, Q·Û.
  out.right_vectors =
      transpose ? Eigen::MatrixXd(q * svd.matrixU().leftCols(rank)) : svd.matrixV().leftCols(rank);
  return out;
}

NCEPLRec::NCEPLRec(const ModelContext& ctx)
    : Model("NCEPLRec", ctx),
      beta_(ctx.config.get_double("beta")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      rank_(checked_rank(ctx.config, ctx.n_users, ctx.n_items)),
      seed_(static_cast<uint64_t>(ctx.config.get_int("seed"))) {
  user_factors_ =
      register_buffer("user_factors", torch::zeros({0, rank_}, ctx.device.float_options()));
  item_factors_ =
      register_buffer("item_factors", torch::zeros({0, rank_}, ctx.device.float_options()));
}

SparseRows NCEPLRec::weighted_matrix() const {
  const std::vector<int64_t> pop = train_.item_degrees();
  const double users = static_cast<double>(n_users());
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(static_cast<size_t>(train_.nnz()));
  for (int32_t u = 0; u < train_.n_users(); ++u)
    for (const int32_t* it = train_.row_begin(u); it != train_.row_end(u); ++it) {
      // pop_i >= 1 on a non-zero of R.
      const double w = std::log(users / std::pow(static_cast<double>(pop[*it]), beta_));
      entries.emplace_back(u, *it, std::max(w, 0.0));
    }
  SparseRows d(n_users(), n_items());
  d.setFromTriplets(entries.begin(), entries.end());
  return d;
}

void NCEPLRec::fit() {
  const TruncatedSvd svd = randomized_svd(weighted_matrix(), rank_, seed_);
  const Eigen::MatrixXd v_star =
      svd.right_vectors * svd.singular_values.cwiseSqrt().asDiagonal();  // [n_items, rank]

  std::vector<Eigen::Triplet<double>> ones;
  ones.reserve(static_cast<size_t>(train_.nnz()));
  for (int32_t u = 0; u < train_.n_users(); ++u)
    for (const int32_t* it = train_.row_begin(u); it != train_.row_end(u); ++it)
      ones.emplace_back(u, *it, 1.0);
  SparseRows r(n_users(), n_items());
  r.setFromTriplets(ones.begin(), ones.end());

  const Eigen::MatrixXd q = r * v_star;  // [n_users, rank]
  Eigen::MatrixXd gram = q.transpose() * q;
  gram.diagonal().array() += reg_weight_;
  const Eigen::LLT<Eigen::MatrixXd> llt(gram);
  if (llt.info() != Eigen::Success)
    throw ConfigError("NCEPLRec: QᵀQ + reg_weight · I is not positive definite with reg_weight " +
                      std::to_string(reg_weight_) +
                      "; expected reg_weight > 0 (RecBole's default is 100)");
  const Eigen::MatrixXd rt_q = SparseRows(r.transpose()) * q;  // (QᵀR)ᵀ, [n_items, rank]
  const Eigen::MatrixXd w_t = llt.solve(rt_q.transpose()).transpose();  // Wᵀ, [n_items, rank]

  assign_buffer(user_factors_, device_manager().place(to_tensor(q)));
  assign_buffer(item_factors_, device_manager().place(to_tensor(w_t)));
}

void NCEPLRec::require_fitted() const {
  if (user_factors_.size(0) != n_users()) throw Error("NCEPLRec: scores requested before fit()");
}

torch::Tensor NCEPLRec::full_sort_predict(const data::Batch& batch) {
  require_fitted();
  return torch::matmul(user_factors_.index_select(0, batch.users), item_factors_.t());
}

torch::Tensor NCEPLRec::predict(const data::Batch& batch) {
  require_fitted();
  return (user_factors_.index_select(0, batch.users) * item_factors_.index_select(0, batch.items))
      .sum(1);
}

bool NCEPLRec::score_factors(torch::Tensor* users, torch::Tensor* items) const {
  if (user_factors_.size(0) != n_users()) return false;
  *users = user_factors_;
  *items = item_factors_;
  return true;
}

RECBOLE_REGISTER_MODEL(NCEPLRec) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NCEPLRec",
       "general",
       InputType::kFitOnce,
       "Noise-contrastive projected linear recommender: randomized SVD, then ridge regression",
       {Key("beta", KeyType::kFloat)
            .min(0)
            .help("Popularity exponent: D_ui = max(log(n_users / pop_i^beta), 0)"),
        Key("rank", KeyType::kInt)
            .min(1)
            .help("Singular vectors kept (at most min(n_users, n_items), pad included)"),
        keys::reg_weight().decl("Ridge weight added to the diagonal of QᵀQ")},
       [](const ModelContext& ctx) { return std::make_shared<NCEPLRec>(ctx); }});
}

}  // namespace recbole::models

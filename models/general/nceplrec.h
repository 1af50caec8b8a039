#pragma once
// NCE-PLRec (Wu et al. 2019) as RecBole defines it, fitted once in closed form:
//   R    the binary training matrix [n_users, n_items] (pad row and column included, empty);
//   pop_i = Σ_u R_ui;  D_ui = max(log(n_users / pop_i^beta), 0) on the non-zeros of R;
//   D ≈ U Σ Vᵀ, a randomized SVD with `rank` components (randomized_svd below);
//   V* = V √Σ [n_items, rank];  Q = R V* [n_users, rank];
//   W = (QᵀQ + reg_weight·I)⁻¹ QᵀR [rank, n_items];  scores = Q_u W.
// RecBole builds the same in its constructor and then runs `epochs` training epochs that change
// nothing; here it is a fitted-once model (docs/models.md).
//
// The fit runs on the CPU in float64 (Eigen); Q and Wᵀ are kept as float32 buffers on the
// device manager's device and offered as score factors (scores are their dot products).
// Memory kept: 4·rank·(n_users + n_items) bytes. Fit: D in sparse rows, and dense float64
// blocks of (rank + 10) columns over the larger of n_users, n_items.
#include <cstdint>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

// The randomized SVD of Halko et al. (sklearn's randomized_svd with
// power_iteration_normalizer='QR'): a Gaussian test matrix of rank + n_oversamples columns,
// n_iter power iterations each renormalised by a thin QR (n_iter < 0: 7 when rank <
// 0.1·min(rows, cols), else 4, sklearn's 'auto'), the matrix transposed first when it has fewer
// rows than columns, then an exact SVD of the small projected matrix. The Gaussian draws come
// from a mt19937_64 seeded by `seed`. Returns the leading `rank` (<= min(rows, cols)) singular
// values (descending) and right singular vectors [cols, rank]; signs are arbitrary.
struct TruncatedSvd {
  Eigen::VectorXd singular_values;  // [rank]
  Eigen::MatrixXd right_vectors;    // [cols, rank]
};
TruncatedSvd randomized_svd(const Eigen::SparseMatrix<double, Eigen::RowMajor>& m, int64_t rank,
                            uint64_t seed, int64_t n_oversamples = 10, int64_t n_iter = -1);

class NCEPLRec : public Model, public FactorScores {
 public:
  explicit NCEPLRec(const ModelContext& ctx);

  void fit() override;
  // batch: users → [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B] float32 on the device.
  torch::Tensor predict(const data::Batch& batch) override;
  // Q [n_users, rank] and Wᵀ [n_items, rank], once fitted.
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override;

  // D as defined above, [n_users, n_items] in sparse rows (float64, CPU).
  Eigen::SparseMatrix<double, Eigen::RowMajor> weighted_matrix() const;

 private:
  void require_fitted() const;

  double beta_, reg_weight_;
  int64_t rank_;
  uint64_t seed_;
  torch::Tensor user_factors_;  // buffer "user_factors": Q, [n_users, rank]
  torch::Tensor item_factors_;  // buffer "item_factors": Wᵀ, [n_items, rank]
};

}  // namespace recbole::models

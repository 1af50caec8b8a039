#pragma once
// SLIMElastic (Ning & Karypis 2011) as RecBole defines it: for every item column j (the padding
// column included) one elastic-net regression of X[:, j] on X, with sklearn's ElasticNet
// objective (fit_intercept off)
//   1/(2·n_users)·‖y − X·w‖² + alpha·l1_ratio·‖w‖₁ + ½·alpha·(1 − l1_ratio)·‖w‖²,
// w ≥ 0 with positive_only, and column j hidden from its own regression with hide_item. The
// coefficients form column j of W; scores are X_u·W.
//
// Solver: coordinate descent in float64 with an active set: a full sweep over every usable
// column, then sweeps over the non-zero coefficients only until they settle, then a full sweep
// again. Coordinates are visited in ascending item order (sklearn's selection="random" draws
// them with replacement; both reach the same minimiser, the objective being strictly convex).
// Stopping is sklearn's, tested after each full sweep: when its largest coefficient change is
// below tol × the largest coefficient (or it is the last of max_iter full sweeps), the duality
// gap is computed and the fit stops when it is below tol·‖y‖². Two ways to keep the gradient:
//  - sparse: the residual y − X·w over users, on the sparse columns of X (item → users), as
//    sklearn's sparse solver; memory O(nnz(X) + n_users) — used for large catalogues;
//  - Gram: XᵀR over items through the dense Gram matrix G = XᵀX (n_items² float64, built from
//    the sparse rows), as sklearn's precompute=True solver; much faster when G is small enough:
//    used when 8·n_items² bytes is at most kGramLimitBytes and half the available memory.
// Items are fitted in parallel on the ThreadPool (key num_threads), each regression independent, so
// the result does not depend on the number of threads.
//
// Memory: W is kept sparse (CSR buffers: 12 bytes per non-zero coefficient, int64 column and
// float32 value, plus the row pointers); the fit needs G (Gram solver) or Xᵀ (sparse solver),
// plus O(n_users + n_items) scratch per thread.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

// What one elastic-net regression did; for tests and logs.
struct ElasticNetReport {
  int64_t sweeps = 0;      // full coordinate-descent sweeps run (at most max_iter)
  double gap = 0.0;        // last duality gap computed (sklearn's scale: ×n_users)
  bool converged = false;  // gap < tol·‖y‖²
};

enum class SlimSolver { kAuto, kSparse, kGram };

class SLIMElastic : public Model, public ItemWeightScores {
 public:
  // The Gram solver is chosen automatically up to this size of G (1 GiB: n_items <= 11585).
  static constexpr double kGramLimitBytes = 1024.0 * 1024.0 * 1024.0;

  // solver: kAuto picks by size (see above); tests force one or the other.
  explicit SLIMElastic(const ModelContext& ctx, SlimSolver solver = SlimSolver::kAuto);

  void fit() override;
  // [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // Scores are x_u · W, W's CSR rows as held.
  bool score_item_weights(ItemWeights* weights) const override {
    weights->indptr = w_indptr_;
    weights->indices = w_indices_;
    weights->values = w_values_;
    return true;
  }

  // W as a dense [n_items, n_items] float32 CPU tensor (W[:, j] = coefficients of item j).
  torch::Tensor dense_weights() const;
  // Per-item solver reports of the last fit() (index = item id).
  const std::vector<ElasticNetReport>& reports() const { return reports_; }

  // Bytes of the dense Gram matrix for n items (8·n²).
  static double gram_bytes(int64_t n_items);
  // Whether fit() uses the Gram solver for n items.
  bool use_gram(int64_t n_items) const;

 private:
  double alpha_, l1_ratio_, tol_;
  bool positive_only_, hide_item_;
  int64_t max_iter_;
  SlimSolver solver_;
  torch::Tensor w_indptr_, w_indices_, w_values_;  // CSR buffers of W, rows = source item
  std::vector<ElasticNetReport> reports_;
};

}  // namespace recbole::models

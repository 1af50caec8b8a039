#pragma once
// ADMMSLIM (Steck et al. 2020), the ADMM iterations as RecBole runs them, without RecBole's
// uniform [0, 1e-5) noise on the scores:
//   μ = column means of X over all user rows (the padding row included);
//   G = XᵀX, or (X − 1μᵀ)ᵀ(X − 1μᵀ) = XᵀX − n_users·μμᵀ with center_columns;
//   D = lambda2·diag(μ^alpha) + rho·I;  P = (G + D)⁻¹;  B_aux = P·G = I − P·D;  Γ = C = 0;
//   `k` times: B̃ = B_aux + P(ρC − Γ); γ = diag(B̃) / (diag(P) + 1e−7); B = B̃ − P·diag(γ);
//              C = soft_threshold(B + Γ/ρ, lambda1/ρ), clipped at 0 with positive_only;
//              Γ += ρ(B − C).
// Scores: X_u·C, or (X_u − μ)·C + μ with center_columns.
//
// Memory: C is a dense n_items² float32 buffer on the device. The fit runs on the CPU: the
// inversion in float64 (at most 20·n² bytes: the Cholesky factor, P and its float32 copy), then
// the iterations hold P, Γ, C, ρC − Γ and P·(ρC − Γ) in float32 (20·n² bytes; B_aux = I − P·D is
// computed element by element, never stored); fit_bytes() = 20·n² is checked first.
//
// Time: one n³ GEMM per iteration (P·(ρC − Γ)), about 9.5 GFLOP at ml-100k's 1683 items, so
// k = 100 iterations are ~1 TFLOP, bound by the CPU's GEMM rate; the element pass is a few ms.
#include "models/capabilities.h"
#include "models/model.h"

namespace recbole::models {

class ADMMSLIM : public Model, public ItemWeightScores {
 public:
  explicit ADMMSLIM(const ModelContext& ctx);

  void fit() override;
  // [B, n_items] float32 on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // Scores are x_u · C (+ m − m · C when the columns are centred, m the item means).
  bool score_item_weights(ItemWeights* weights) const override;

  // C: [n_items, n_items] float32 on the device (empty before fit()).
  torch::Tensor item_similarity() const { return c_; }

  static double fit_bytes(int64_t n_items);

 private:
  double lambda1_, lambda2_, alpha_, rho_;
  int64_t iterations_;
  bool positive_only_, center_columns_;
  torch::Tensor c_;           // buffer "item_similarity" [n_items, n_items]
  torch::Tensor item_means_;  // buffer [n_items] float32
};

}  // namespace recbole::models

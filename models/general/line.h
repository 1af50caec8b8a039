#pragma once
// LINE (Tang et al. 2015) on the user–item graph, as RecBole defines it: "vertex" tables for
// users and items and, with order 2, "context" tables (all embedding_size, xavier-normal).
// Pairwise input (u, i⁺, i⁻). Per batch, with ℓ(sign, s) = −mean_b log σ(sign · s_b), one draw
// picks a branch with probability ½ each:
//   A (negative items):  ℓ(+, ⟨u, i⁺⟩) + ℓ(−, ⟨u, i⁻⟩)
//                        [+ w·(ℓ(+, ⟨u, ctx(i⁺)⟩) + ℓ(−, ⟨u, ctx(i⁻)⟩))]
//   B (negative users):  ℓ(+, ⟨u, i⁺⟩) + ℓ(−, ⟨u⁻, i⁺⟩)
//                        [+ w·(ℓ(+, ⟨i⁺, ctx(u)⟩) + ℓ(−, ⟨i⁺, ctx(u⁻)⟩))]
// where u⁻ is a user in 1..n_users−1 who has not interacted with i⁺ (drawn per row), w =
// second_order_loss_weight, and the bracketed terms exist with order 2 only. Scores are
// ⟨user vertex, item vertex⟩.
//
// Randomness: the branch and the negative users of batch b of epoch e come from a mt19937_64
// seeded by (config seed, e, b), so a run repeats exactly and a resumed run continues exactly
// (RecBole draws them from Python's and numpy's global generators).
//
// Shapes: full_sort_predict [B, n_items], predict [B], float32 on the device.
#include <cstdint>
#include <vector>

#include "models/capabilities.h"
#include "models/general/fitted_support.h"
#include "models/model.h"

namespace recbole::models {

class LINE : public Model, public FactorScores {
 public:
  explicit LINE(const ModelContext& ctx);

  // batch: users, items, neg_items (on the device). Counts the batch (see batch_draws).
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items].
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B].
  torch::Tensor predict(const data::Batch& batch) override;
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override {
    *users = user_embedding_;
    *items = item_embedding_;
    return true;
  }

  void on_epoch_start(int64_t epoch) override {
    epoch_ = epoch;
    batch_ = 0;
  }
  // The epoch and the batch counter.
  void save_training_state(torch::serialize::OutputArchive& archive) const override;
  void load_training_state(torch::serialize::InputArchive& archive) override;

  // What batch `batch` of `epoch` draws: whether it takes branch B (negative users), and then
  // one negative user per positive item (items: CPU ids), else nothing.
  struct Draws {
    bool negative_users = false;
    std::vector<int64_t> users;
  };
  Draws batch_draws(int64_t epoch, int64_t batch, const std::vector<int64_t>& items) const;

 private:
  torch::Tensor user_embedding_, item_embedding_;
  torch::Tensor user_context_embedding_, item_context_embedding_;  // order 2 only
  BinaryCsr item_users_;  // item → its training users, ascending
  int64_t order_;
  double second_order_weight_;
  uint64_t seed_;
  int64_t epoch_ = 0, batch_ = 0;
};

}  // namespace recbole::models

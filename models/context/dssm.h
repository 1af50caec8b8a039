#pragma once
// DSSM (RecBole's DSSM): two towers, each an MLP (tanh, BatchNorm, dropout) over the flattened
// embeddings of its side's fields (user: user_id and the user features; item: item_id and the
// item features; interaction-side features are not used); the score is the cosine of the two
// outputs (norms clamped at 1e-8), trained as a logit with BCE, so predictions lie in
// [σ(−1), σ(1)] as in RecBole. No first-order part.
#include "models/context/context_model.h"

namespace recbole::models {

class DSSM : public ContextModel {
 public:
  explicit DSSM(const ModelContext& ctx);
  // The cosine [B] in [−1, 1].
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  torch::Tensor user_positions_, item_positions_;  // [n] int64: the sides' positions in E
  layers::ContextMLP user_tower_{nullptr}, item_tower_{nullptr};
};

}  // namespace recbole::models

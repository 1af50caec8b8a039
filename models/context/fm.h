#pragma once
// FM: factorisation machine (RecBole's FM): first-order part + ½ Σ_k ((Σ_f E)² − Σ_f E²).
#include "models/context/context_model.h"

namespace recbole::models {

class FM : public ContextModel {
 public:
  explicit FM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  ClosedForm closed_form() const override { return {/*first_order=*/true, /*fm=*/true}; }
};

}  // namespace recbole::models

#pragma once
// LR: logistic regression over the features (RecBole's LR): the logit is the first-order part,
// one weight per token (token_seq weights summed), plus a bias.
#include "models/context/context_model.h"

namespace recbole::models {

class LR : public ContextModel {
 public:
  explicit LR(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  ClosedForm closed_form() const override { return {/*first_order=*/true}; }
};

}  // namespace recbole::models

#pragma once
// WideDeep (RecBole's WideDeep): the first-order part (the wide side, no cross products) plus
// an MLP (relu, dropout) over the flattened field embeddings.
#include <memory>
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class WideDeep : public ContextModel {
 public:
  explicit WideDeep(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  // The closed form of the logit on the CPU, as DeepFM's without the FM term.
  ClosedForm closed_form() const override {
    return {/*first_order=*/true, /*fm=*/false, /*deep=*/true};
  }
  layers::DirectMLP* deep_part() const override { return direct_.get(); }

 private:
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
  std::unique_ptr<layers::DirectMLP> direct_;
};

}  // namespace recbole::models

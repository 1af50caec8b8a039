#pragma once
// DeepFM (RecBole's DeepFM): first-order part + FM term + an MLP (relu, dropout) over the
// flattened field embeddings, the FM and the MLP sharing E.
#include <memory>

#include "models/context/context_model.h"

namespace recbole::models {

class DeepFM : public ContextModel {
 public:
  explicit DeepFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;
  // The closed form of the logit on the CPU: a step and an evaluation without autograd
  // (ContextModel::closed_form_backward; the deep part by layers::DirectMLP).
  ClosedForm closed_form() const override {
    return {/*first_order=*/true, /*fm=*/true, /*deep=*/true};
  }
  layers::DirectMLP* deep_part() const override { return direct_.get(); }

 private:
  layers::ContextMLP mlp_{nullptr};
  torch::nn::Linear predict_{nullptr};
  std::unique_ptr<layers::DirectMLP> direct_;
};

}  // namespace recbole::models

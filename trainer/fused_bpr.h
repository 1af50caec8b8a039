#pragma once
// FusedBprTrainer: a fast training path for BPR on the CPU that computes the same thing as the
// generic autograd path — BPR loss −mean(log(1e−10 + σ(⟨u,i⁺⟩ − ⟨u,i⁻⟩))) and torch's Adam
// (dense: every row's moments decay every step, as torch.optim.Adam does) — with sampling,
// gradient and update fused into plain loops over float arrays: no autograd graph, no per-op
// dispatch, gradients touched only for the rows a batch uses.
//
// Used automatically by the Trainer when fused_bpr_applicable() says so (key fast_bpr, model
// BPR, device CPU, learner adam, no clip_grad_norm, one process); otherwise the generic path
// runs. The parameters are the model's own tensors, updated in place, so checkpoints and
// evaluation see them as usual.
#include <memory>
#include <vector>

#include "models/general/bpr.h"
#include "recbole/data/train_batcher.h"

namespace recbole::trainer {

bool fused_bpr_applicable(const config::Config& config, const models::Model& model,
                          const DeviceManager& device, int world_size);

class FusedBprTrainer {
 public:
  FusedBprTrainer(models::BPR& model, double learning_rate, double weight_decay);
  // One epoch over `batcher` (already started); returns the summed batch loss.
  double train_epoch(data::TrainBatcher& batcher);

 private:
  void adam_step(float* param, float* grad, float* m, float* v, int64_t n);

  models::BPR& model_;
  double lr_, wd_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  int64_t step_ = 0;
  int64_t dim_;
  std::vector<float> user_grad_, item_grad_, user_m_, user_v_, item_m_, item_v_;
};

}  // namespace recbole::trainer

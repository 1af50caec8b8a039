#pragma once
// FusedBprTrainer: a fast training path for BPR on the CPU. Same loss as the generic autograd
// path — −mean(log(1e−10 + σ(⟨u,i⁺⟩ − ⟨u,i⁻⟩))) — with the gradient and the optimizer step
// written as plain loops over the embedding rows a batch uses, on the ThreadPool: no autograd
// graph, no per-op dispatch. (σ and ln in the loss use branch-free approximations within ~2
// ulp, so that the loss loop vectorises; the metrics match the generic path to 4 decimals.)
//
// The optimizer follows the learner:
//  - adam: torch.optim.Adam exactly (dense: every row's moments decay and every row moves each
//    step, as in RecBole), so this path and the generic one compute the same thing up to float
//    rounding order. The dense pass costs O(rows × dim) per batch: fine for ml-100k, slow for
//    a million users.
//  - sparse_adam: torch.optim.SparseAdam (lazy Adam: only the rows with a gradient in the batch
//    update their moments and move; bias correction by the global step). Cost O(batch × dim):
//    the choice for large tables.
//
// Each batch runs in three pool jobs: (A) per-sample score differences and loss, (B) gradient
// accumulation, worker w owning the 64-row blocks with (id / 64) % threads == w and adding
// their contributions in sample order, (C) the Adam update, each worker over its own blocks:
// the rows it touched (sparse_adam) or all of them (adam). Results are identical for any
// number of threads (tested).
//
// Used automatically by the Trainer when fused_bpr_applicable() says so (key fast_bpr, model
// BPR, device CPU, learner adam, or sparse_adam without weight_decay, no clip_grad_norm, one
// process); otherwise the generic path runs. The parameters are the model's own tensors,
// updated in place, so checkpoints and evaluation see them as usual.
#include <cstdint>
#include <vector>

#include "models/general/bpr.h"
#include "recbole/data/train_batcher.h"

namespace recbole::trainer {

bool fused_bpr_applicable(const config::Config& config, const models::Model& model,
                          const DeviceManager& device, int world_size);

class FusedBprTrainer {
 public:
  enum class Update { kDenseAdam, kLazyAdam };

  FusedBprTrainer(models::BPR& model, Update update, double learning_rate, double weight_decay);
  // One epoch over `batcher` (already started); returns the summed batch loss.
  double train_epoch(data::TrainBatcher& batcher);
  Update update() const { return update_; }

 private:
  // One table (users or items): parameters [rows, dim] (the model's tensor), and per row the
  // gradient, Adam moments and the step at which the gradient row was last zeroed.
  struct Table {
    float* param = nullptr;
    int64_t rows = 0;
    std::vector<float> grad, m, v;
    std::vector<int64_t> stamp;                // step that last touched the row; -1 never
    std::vector<std::vector<int64_t>> touched;  // per ownership class: rows touched this step
  };

  models::BPR& model_;
  Update update_;
  double lr_, wd_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  int64_t step_ = 0;
  int64_t dim_;
  Table users_, items_;
  std::vector<float> dx_;  // [B] d loss / d score difference, per sample
};

}  // namespace recbole::trainer

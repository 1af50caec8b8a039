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
//  - sgd: torch.optim.SGD without momentum (as RecBole builds it): p −= lr · g. Without weight
//    decay only the rows a batch uses move (the others' gradient is 0), so the cost is
//    O(batch × dim) and no moments are kept; with weight decay every row decays each step.
//
// Each batch runs in two pool jobs over the loops of kernels/bpr_step.h (this class keeps the
// orchestration: the jobs, the buffers, the row partition's loops, the optimizer's step count):
//  (A) per chunk of samples: draw the chunk's negatives, then score_chunk: the score
//      differences, the loss and its derivative (and, for big tables, stash each sample's user
//      row and item row difference i⁺ − i⁻);
//  (B) per worker, for the rows it owns (64-row blocks with (id / 64) % threads == w):
//      gather_gradients sums each row's gradient in sample order into a compact buffer (one
//      slot per row the batch touches), then the optimizer's update runs on those rows
//      (sparse_adam, sgd) or on all its rows (adam, sgd with weight decay). The gradients read
//      the parameter rows themselves, so a barrier separates the gathering from the updates
//      (ThreadPool::run_phases); with stashes (parameters over kStashAboveBytes) they read the
//      stashes in sample order instead, and need no barrier.
// Results are identical for any number of threads (tested).
//
// BPR offers it as its fast epoch (BPR::fast_epoch) when fused_bpr_applicable() says so (key
// fast_bpr, device CPU, learner adam, sparse_adam or sgd, no clip_grad_norm, no amp, one process,
// sampled negatives); otherwise the trainer's generic batch loop runs. The parameters are the
// model's own tensors, updated in place, so checkpoints and evaluation see them as usual.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bpr_step.h"
#include "models/general/bpr.h"
#include "recbole/data/train_batcher.h"

namespace recbole::models {

bool fused_bpr_applicable(const config::Config& config, const BPR& model,
                          const DeviceManager& device, int world_size);

class FusedBprTrainer {
 public:
  enum class Update { kDenseAdam, kLazyAdam, kSgd };
  static constexpr int64_t kMaxDim = kernels::bpr::kMaxDim;  // embedding_size limit of this path
  // Above this many bytes of parameters (both tables), job A stashes each sample's u and
  // i⁺ − i⁻ and the gather reads those, sequentially, instead of the parameter rows: measured,
  // the stash costs ~15% of an epoch while the tables sit in the caches (ml-100k, 1M) and
  // saves ~7% at 100M interactions (282 MB of rows, cold), neutral at 20M.
  static constexpr double kStashAboveBytes = 32.0 * 1024 * 1024;

  // stash_above_bytes: kStashAboveBytes unless a test forces one way of gathering.
  FusedBprTrainer(BPR& model, Update update, double learning_rate, double weight_decay,
                  double stash_above_bytes = kStashAboveBytes);
  // The rest of the epoch of `batcher` (started, possibly part-way through), adding each
  // batch's loss to loss_sum; after_batch() runs after every batch, and true stops the epoch
  // there (see FastEpoch::train_epoch).
  void train_epoch(data::TrainBatcher& batcher, double& loss_sum,
                   const std::function<bool()>& after_batch);
  // The optimizer's state (step count, Adam moments), for resume checkpoints.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  Update update() const { return update_; }
  // The optimizer step for a `learner` value (any case); none when the fused path does not
  // implement that learner. The one list of the learners this path supports.
  static std::optional<Update> update_for(const std::string& learner);

 private:
  // One table (users or items): parameters [rows, dim] (the model's tensor), Adam moments.
  struct Table {
    float* param = nullptr;
    int64_t rows = 0;
    std::vector<float> m, v;  // empty for sgd
    // Per row: the slot of its gradient in the owning worker's buffer at this step, -1 when the
    // step has not touched it (the owner resets its touched rows after the update). 4 bytes a
    // row: at 100M interactions every sample looks up three rows here.
    std::vector<int32_t> slot;
  };
  // A worker's side of job B: the buffers of its rows' gradients at this step (users, items:
  // kernels::bpr::RowGradients over touched_* and *_grads, filled by the gather) and the
  // gather's scratch lists of contributions.
  struct WorkerScratch {
    std::vector<int32_t> touched_users, touched_items;  // [b], [2b]
    std::vector<float> user_grads, item_grads;          // [b, dim], [2b, dim]
    std::vector<kernels::bpr::Contribution> user_list, item_list;
    kernels::bpr::RowGradients users{}, items{};
  };

  void gather_owned_rows(int worker, int workers, int64_t b, const data::PairBatch& pb);
  void update_owned_rows(int worker, int workers);

  BPR& model_;
  Update update_;
  double lr_, wd_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  int64_t step_ = 0;
  int64_t dim_;
  bool stash_ = false;  // see kStashAboveBytes
  Table users_, items_;
  std::vector<WorkerScratch> scratch_;          // per worker
  std::vector<float> dx_;                       // [B] d loss / d score difference, per sample
  std::vector<float> user_stash_, diff_stash_;  // [B, dim]: u, and i⁺ − i⁻ (stash_ only)
};

}  // namespace recbole::models

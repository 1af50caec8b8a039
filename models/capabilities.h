#pragma once
// Capabilities: what a model may offer beyond the core contract of models/model.h, each for the
// one consumer that asks for it. A model takes a capability by deriving from it beside Model
// (class BPR : public Model, public FactorScores, public OwnEpoch); the consumer asks with
// models::capability<C>(model), which is nullptr for a model without it.
//
//   capability        consumer                                  what it offers
//   FactorScores      CPU evaluator, serving                    user and item factor matrices
//   ItemWeightScores  serving                                   an item-to-item weight matrix
//   HistoryScores     serving                                   scores from a given item history
//   CandidateScores   dynamic negative sampling (trainer)       candidates scored once per query
//   MultiPassEpoch    trainer                                   several passes per epoch
//   OwnEpoch          trainer                                   a whole epoch of its own (BPR's
//   fused path)
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "models/model.h"

namespace recbole::data {
class TrainBatcher;
}

namespace recbole::models {

// The capability C of `model`, or nullptr when the model does not offer it.
template <typename C>
C* capability(Model& model) {
  return dynamic_cast<C*>(&model);
}
template <typename C>
const C* capability(const Model& model) {
  return dynamic_cast<const C*>(&model);
}

// Every score is ⟨user factor, item factor⟩: the CPU evaluator fuses the product with masking
// and top-K tile by tile (trainer/evaluator.h), and serving scores from the factors.
class FactorScores {
 public:
  virtual ~FactorScores() = default;
  // users: [n_users, d], items: [n_items, d], float32 on the device; false when the model has
  // no such factors in its current setting.
  virtual bool score_factors(torch::Tensor* users, torch::Tensor* items) const = 0;
};

// Every score is x_u · W + bias, x_u the 0/1 row of the user's training items and W an
// item-to-item weight matrix (EASE, SLIM, ItemKNN in item mode): a server scores a user by
// summing the rows of W its few history items select instead of a dense product, and can score
// an item history given by a caller (serving/recommender.h).
class ItemWeightScores {
 public:
  struct ItemWeights {
    torch::Tensor dense;                    // [n_items, n_items] float32, or undefined
    torch::Tensor indptr, indices, values;  // CSR rows of W (int64, int64, float32) otherwise
    torch::Tensor bias;                     // [n_items] float32, or undefined (no bias)
  };
  virtual ~ItemWeightScores() = default;
  // W as a dense tensor or as CSR rows; false when the model has none in its current setting.
  virtual bool score_item_weights(ItemWeights* weights) const = 0;
};

// full_sort_predict scores a row from batch.history alone when the batch carries one
// ([B, n_items] 0/1 float32; batch.users then holds the padding user 0): a user the model never
// saw, given by the items they interacted with (the autoencoders, Pop, the sequence models from
// their sequence). A model with ItemWeightScores is scored from a history through its weights.
class HistoryScores {
 public:
  virtual ~HistoryScores() = default;
  // False when the model's setting reads the user's own parameters after all (Caser).
  virtual bool scores_from_history() const { return true; }
};

// Scores dynamic negative sampling's candidates (tasks/dynamic_negatives.h): batch holds
// candidate_num blocks of n rows, row k · n + j differing from row j only in its item (and that
// item's own features) → [candidate_num · n] float32 on the device, predict's scores, the query
// side computed once per j (a sequence encoder). A model without it is scored by predict.
class CandidateScores {
 public:
  virtual ~CandidateScores() = default;
  virtual torch::Tensor predict_candidates(const data::Batch& batch, int64_t candidate_num) = 0;
};

// What one pass over the training source yields: its own batches (the input type's), its
// auxiliary batches alone (a family's second stream: the knowledge task's KG triples, KGAT's KG
// pass), or nothing (the pass is skipped in this epoch: MKR's KG pass outside every
// kge_interval-th epoch).
enum class PassBatches { kMain, kAuxiliary, kSkip };

// Several passes over the training source in one epoch (RecVAE: its encoder passes, then its
// decoder passes; KGAT: its recommendation pass, then a KG pass); each pass walks the source in
// a new order.
class MultiPassEpoch {
 public:
  virtual ~MultiPassEpoch() = default;
  virtual int64_t passes_per_epoch() const { return 1; }
  // Runs before pass p.
  virtual void on_pass_start(int64_t pass) { (void)pass; }
  // What pass p of epoch e walks: a function of (epoch, pass) alone, so that a resumed run walks
  // what the interrupted one would have.
  virtual PassBatches pass_batches(int64_t epoch, int64_t pass) const {
    (void)epoch;
    (void)pass;
    return PassBatches::kMain;
  }
};

// A model's own epoch loop, used instead of the trainer's batch loop.
class FastEpoch {
 public:
  virtual ~FastEpoch() = default;
  // Trains the rest of the source's epoch (started, possibly part-way through: a resumed run),
  // adding each batch's loss to loss_sum. after_batch() runs after every batch; when it returns
  // true the run is being stopped, and the epoch returns at once, between two batches.
  virtual void train_epoch(double& loss_sum, const std::function<bool()>& after_batch) = 0;
  // The path's own training state (optimizer moments, step count), for resume checkpoints.
  virtual void save(torch::serialize::OutputArchive& archive) const { (void)archive; }
  virtual void load(torch::serialize::InputArchive& archive) { (void)archive; }
  // One line for the log: what runs instead of the generic path.
  virtual std::string describe() const = 0;
};

// What a model may look at to decide whether its own epoch applies.
struct TrainingEnv {
  const config::Config& config;
  const DeviceManager& device;
  int world_size;
  // The batcher of pairs with sampled negatives whose batches the training source yields, when
  // the source lets a model's own epoch drive it (TrainingSource::sampled_pair_batcher; BPR's
  // fused epoch), else nullptr.
  data::TrainBatcher* pair_batcher = nullptr;
};

// A whole epoch of the model's own making (BPR's fused CPU path), when it applies. It is a fast
// path: under fast_path: false (the reference path everywhere) the trainer does not ask.
class OwnEpoch {
 public:
  virtual ~OwnEpoch() = default;
  // The epoch for `env`, or nullptr when it does not apply (the trainer's batch loop runs).
  virtual std::unique_ptr<FastEpoch> fast_epoch(const TrainingEnv& env) = 0;
};

}  // namespace recbole::models

#pragma once
// Training sources: what the trainer pulls batches from. The task family's pipeline builds the
// source that the model's input type asks for; the trainer only calls start_epoch and next, and
// never knows which kind it holds.
//
// Every source is deterministic given (seed, epoch) and splits each batch over ranks by
// position (row p goes to rank p % world_size), without asking a process group.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/capabilities.h"
#include "models/model.h"
#include "recbole/data/batch.h"
#include "recbole/data/interaction_matrix.h"

namespace recbole::config {
class Config;
}
namespace recbole::data {
class TrainBatcher;
}

namespace recbole::tasks {

// Scores dynamic negative sampling's candidates with the model being trained, as predict does in
// eval mode without gradient (Model::predict_candidates: candidate_num blocks of rows that differ
// only in the item): [B] float32 on the CPU.
using CandidateScorer =
    std::function<torch::Tensor(const data::Batch& candidates, int64_t candidate_num)>;

class TrainingSource {
 public:
  virtual ~TrainingSource() = default;
  // Prepares the epoch's order (shuffled from (seed, epoch) when shuffling).
  virtual void start_epoch(int64_t epoch) = 0;
  // Fills `batch` (CPU tensors) with this rank's part of the next batch; false when the epoch
  // is over.
  virtual bool next(data::Batch& batch) = 0;
  virtual int64_t batches_per_epoch() const = 0;
  // Moves past the next n batches of the epoch (a resumed run continues after those it had
  // done); the batches that follow are those next() would have given. Default: builds and drops
  // them; a source that can skip cheaply overrides it.
  virtual void skip_batches(int64_t n);
  // The batcher of a pairwise source that samples negatives, which BPR's fused epoch drives
  // itself (between start_epoch and the epoch's end); nullptr for other sources. A source that
  // wraps another forwards the inner one's.
  virtual data::TrainBatcher* sampled_pair_batcher() { return nullptr; }
  // What the passes that follow walk (set before start_epoch): the source's own batches, or its
  // auxiliary batches alone, which only a family with a second stream has (the knowledge task's
  // KG triples; ConfigError otherwise).
  virtual void use_batches(models::PassBatches batches);
  // Gives a source that draws dynamic negatives (train_neg_sample_args.dynamic) the scorer of
  // its candidates, before the first epoch; false from a source that does not draw them (the
  // trainer then refuses the option). A source that wraps another forwards it.
  virtual bool set_candidate_scorer(CandidateScorer /*scorer*/) { return false; }
};

// train_neg_sample_args, read once: RecBole's {distribution, sample_num, alpha, dynamic,
// candidate_num}; distribution "none" when the key is null.
struct NegativeSampling {
  std::string distribution = "none";  // none | uniform | popularity
  int sample_num = 1;
  double alpha = 1.0;
  // Dynamic sampling (RecBole's dynamic: true): each negative is the best-scored of this many
  // drawn candidates; 0 when static.
  int64_t candidate_num = 0;
  bool enabled() const { return distribution != "none"; }
  bool dynamic() const { return enabled() && candidate_num > 0; }
};
// Throws ConfigError when sample_num exceeds train_batch_size (a batch holds
// train_batch_size // sample_num positives).
NegativeSampling negative_sampling_from_config(const config::Config& config);

// How a source walks the training data.
struct SourceSettings {
  int64_t batch_size = 2048;
  bool shuffle = true;
  uint64_t seed = 2020;
  int rank = 0;
  int world_size = 1;
  NegativeSampling negatives;
};
SourceSettings source_settings_from_config(const config::Config& config, int rank, int world_size);

}  // namespace recbole::tasks

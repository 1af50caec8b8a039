#pragma once
// The sequential task (RecBole's SEQUENTIAL models): next-item prediction from each user's
// time-ordered history (data/sequence_store.h). A training sample is a position in a user's
// sequence; a batch cuts the inputs it needs (item_seq [B, L] int64 right-padded with 0,
// item_seq_len [B], items = the targets, users), never a stored copy per prefix.
//
// Evaluation: a query row is a valid or test sample (one per user under leave-one-out), ranked
// against every item (or sampled candidates) with nothing masked but the padding item:
// RecBole's `repeatable` full sort, where history items stay rankable.
//
// Configuration (RecBole's rules): repeatable must be true (the preset sets it); a CE-loss model
// trains without negatives — with the default train_neg_sample_args it says so in the log, a
// train_neg_sample_args set by the user is a ConfigError as in RecBole; a BPR-loss (pairwise)
// model samples negatives, excluding only the sample's own target (RecBole's
// RepeatableSampler), keyed by (seed, epoch, batch) like every source; with dynamic: true each
// negative is the best-scored of candidate_num candidates, scored after the sample's input.
#include <memory>
#include <vector>

#include "recbole/data/interaction_matrix.h"
#include "recbole/data/sequence_store.h"
#include "tasks/task_pipeline.h"

namespace recbole::tasks {

// A split's samples as ranking queries: row r is sample r; its one positive is its target.
class SequenceRankingSource : public tasks::RankingSource {
 public:
  // store and samples must outlive this.
  SequenceRankingSource(const data::SequenceStore& store, const data::SequenceSamples& samples,
                        int64_t n_items);
  const std::vector<int32_t>& rows() const override { return rows_; }
  const data::InteractionMatrix& positives() const override { return positives_; }
  const data::InteractionMatrix* mask() const override { return nullptr; }
  // users, items (targets), item_seq [B, L], item_seq_len [B].
  data::Batch batch(const std::vector<int64_t>& rows) const override;
  bool rows_are_users() const override { return false; }

 private:
  const data::SequenceStore& store_;
  const data::SequenceSamples& samples_;
  std::vector<int32_t> rows_;
  data::InteractionMatrix positives_;
};

// The input columns of `samples` rows `rows` (CPU): users, items, item_seq, item_seq_len.
data::Batch sequence_batch(const data::SequenceStore& store, const data::SequenceSamples& samples,
                           const std::vector<int64_t>& rows);

// The next-item training source: the epoch's shuffled training samples in batches; with
// negative sampling (pairwise models, BPR loss), sample_num negatives per sample, the samples
// repeated as a block (RecBole's layout). neg_items is set only then.
std::unique_ptr<TrainingSource> make_next_item_source(const data::SequenceStore& store,
                                                      int64_t n_items,
                                                      const std::vector<int64_t>& item_count,
                                                      const SourceSettings& settings);

class SequentialPipeline : public TaskPipeline {
 public:
  // Builds the sequences (throws ConfigError for a missing time field, order RO,
  // repeatable false) and logs the split sizes in samples and the users too short to have one.
  SequentialPipeline(const config::Config& config, const data::Dataset& dataset);
  // From a store built elsewhere (tests).
  SequentialPipeline(const config::Config& config, data::SequenceStore store, int64_t n_users,
                     int64_t n_items);

  models::ModelContext model_context(const DeviceManager& device) const override;
  std::unique_ptr<TrainingSource> training_source(models::InputType input, const std::string& model,
                                                  int rank, int world_size) const override;
  const tasks::EvaluationSource& valid() const override { return valid_source_; }
  const tasks::EvaluationSource& test() const override { return test_source_; }
  const std::vector<int64_t>& item_train_count() const override { return item_count_; }
  int64_t n_items() const override { return n_items_; }
  SplitSizes split_sizes() const override {
    return {store_.train().size(), store_.valid().size(), store_.test().size(), "samples"};
  }
  const data::SequenceStore& store() const { return store_; }

 private:
  const config::Config& config_;
  data::SequenceStore store_;
  int64_t n_users_, n_items_;
  data::InteractionMatrix train_;  // user → training targets (what ModelContext::train holds)
  std::vector<int64_t> item_count_;
  SequenceRankingSource valid_source_, test_source_;
};

}  // namespace recbole::tasks

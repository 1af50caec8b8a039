#pragma once
// The context task (RecBole's CONTEXT models: LR, FM, DeepFM, ...): labelled interaction rows
// with the features of their user and item. Feature columns are stored once per user, per item
// (and per interaction row for interaction-side fields) as CPU tensors, and gathered for each
// batch into Batch::features (data/feature_schema.h lists the layouts); nothing is copied per
// interaction up front. Training walks the labelled training rows point-wise (with sampled
// negatives when train_neg_sample_args asks); validation and test are labelled sources in split
// order (the labeled mode) or rank every item for their users (full, uniN, popN).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/context/context_model.h"
#include "recbole/data/feature_schema.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/data/negative_sampler.h"
#include "tasks/dynamic_negatives.h"
#include "tasks/task_pipeline.h"

namespace recbole::tasks {

// The feature columns of one side, indexed by user id, item id or interaction row.
class FeatureColumns {
 public:
  // Adds the column of `spec` from a table column (CPU; rows = the index space). A discretised
  // spec takes its cells' bucket ids from `buckets` (one per value of column.floats).
  void add(const data::FeatureSpec& spec, const data::Column& column,
           const std::vector<int64_t>& buckets = {});
  // Adds a column already in its batch layout (rows = the index space; a checkpoint's copy).
  void add(const std::string& name, torch::Tensor column) {
    columns_.emplace_back(name, std::move(column));
  }
  // Gathers row index[b] of every column into out[name]: index [B] int64 CPU.
  void gather(const torch::Tensor& index, std::map<std::string, torch::Tensor>& out) const;
  bool empty() const { return columns_.empty(); }
  const std::vector<std::pair<std::string, torch::Tensor>>& columns() const { return columns_; }

 private:
  std::vector<std::pair<std::string, torch::Tensor>> columns_;
};

// batch.features gains the user id field (batch.users) and the user-side columns of
// batch.users.
void add_user_features(const std::string& uid_field, const FeatureColumns& user_features,
                       data::Batch& batch);

// What the context sources read (owned by the pipeline, must outlive the sources).
struct ContextRows {
  const std::vector<int32_t>& users;  // [n_inters] remapped user id of each dataset row
  const std::vector<int32_t>& items;  // [n_inters]
  const std::vector<float>& labels;   // [n_inters] 0/1 (or the given label value)
  const FeatureColumns& user_features;
  const FeatureColumns& item_features;
  const FeatureColumns& inter_features;
  std::string uid_field, iid_field;
  // The batch of dataset rows `rows` (CPU): users, items, labels and every feature field.
  // items, labels: when given ([rows.size()] each), row k's item (its item-side features
  // gathered for it) and label instead of the dataset row's — a sampled negative keeps its
  // row's user and interaction-side fields, as RecBole's point-wise sampling.
  data::Batch batch(const std::vector<int64_t>& rows, const std::vector<int64_t>* items = nullptr,
                    const std::vector<float>* labels = nullptr) const;
};

// Labelled evaluation of one split: consecutive batches of batch_size rows in split order.
class ContextLabeledSource : public tasks::LabeledSource {
 public:
  ContextLabeledSource(const ContextRows& rows, const std::vector<int64_t>& split_rows,
                       int64_t batch_size)
      : rows_(rows), split_rows_(split_rows), batch_size_(std::max<int64_t>(batch_size, 1)) {}
  int64_t batches() const override {
    return (static_cast<int64_t>(split_rows_.size()) + batch_size_ - 1) / batch_size_;
  }
  data::Batch batch(int64_t k) const override;

 private:
  const ContextRows& rows_;
  const std::vector<int64_t>& split_rows_;
  int64_t batch_size_;
};

// Ranking evaluation of one split (eval_args mode full, uniN or popN), as RecBole's fallback
// for context models: a row is a user, its positives are its items in the split whatever their
// label, and its batch carries the user-side feature columns; the model attaches every item's
// (ContextModel::full_sort_predict).
class ContextRankingSource : public tasks::UserRankingSource {
 public:
  // positives, mask: user → items (must outlive this); mask may be null.
  ContextRankingSource(const ContextRows& rows, const data::InteractionMatrix& positives,
                       const data::InteractionMatrix* mask)
      : UserRankingSource(positives, mask), rows_(rows) {}
  data::Batch batch(const std::vector<int64_t>& rows) const override;

 private:
  const ContextRows& rows_;
};

// Point-wise training over the labelled training rows: a new order every epoch (from seed and
// epoch), batches of batch_size rows, the last one smaller; row p of a batch goes to rank
// p % world_size. With train_neg_sample_args (RecBole's point-wise sampling): a batch holds
// batch_size / (1 + sample_num) rows, every one labelled 1 whatever its label, then sample_num
// blocks of the same rows with an item the user has no training row with, labelled 0; row p's
// negatives come from a stream of (seed, epoch, p), the same on any number of ranks. With
// dynamic: true each negative is the best-scored of candidate_num candidates (the static draw and
// more from a second stream of row p), each scored with its own item-side features (RecBole
// scores them with the positive item's features: a bug not copied, docs/models.md).
class ContextTrainingSource : public TrainingSource {
 public:
  // train, item_count: the training rows' user → items and per-item counts (the sampler's
  // exclusions and popularity); must outlive the source.
  ContextTrainingSource(const ContextRows& rows, const std::vector<int64_t>& train_rows,
                        const SourceSettings& settings, const data::InteractionMatrix& train,
                        const std::vector<int64_t>& item_count);
  void start_epoch(int64_t epoch) override;
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override;
  void skip_batches(int64_t n) override { next_ += n * originals_; }
  bool set_candidate_scorer(CandidateScorer scorer) override;

 private:
  const ContextRows& rows_;
  const std::vector<int64_t>& train_rows_;
  SourceSettings settings_;
  std::unique_ptr<data::NegativeSampler> sampler_;  // null without sampling
  int sample_num_ = 0;
  std::unique_ptr<DynamicNegatives> dynamic_;  // null with static sampling
  int64_t originals_;                          // dataset rows per batch
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  int64_t next_ = 0;

  // Replaces the negatives items[row_keys.size()..] (of all_rows) by their best-scored
  // candidates; row_keys: the stream key of each of the batch's rows.
  void pick_dynamic(const std::vector<uint64_t>& row_keys, const std::vector<int64_t>& all_rows,
                    std::vector<int64_t>& items) const;
};

class ContextPipeline : public TaskPipeline {
 public:
  // Each split is evaluated on its labelled rows (mode labeled) or by ranking every item for
  // its users (full, uniN, popN; models reading an interaction-side field are refused). Throws
  // ConfigError for ranking metrics under the labeled mode or unknown numerical_features;
  // DataError when the interactions carry no label (no threshold and no LABEL_FIELD column).
  ContextPipeline(const config::Config& config, const data::Dataset& dataset,
                  const data::SplitDataset& split);

  models::ModelContext model_context(const DeviceManager& device) const override;
  std::unique_ptr<TrainingSource> training_source(models::InputType input, const std::string& model,
                                                  int rank, int world_size) const override;
  const tasks::EvaluationSource& valid() const override { return *valid_source_; }
  const tasks::EvaluationSource& test() const override { return *test_source_; }
  const std::vector<int64_t>& item_train_count() const override { return item_count_; }
  int64_t n_items() const override { return n_items_; }
  SplitSizes split_sizes() const override;

  const data::FeatureSchema& schema() const { return schema_; }
  const FeatureColumns& user_features() const { return user_features_; }
  const FeatureColumns& item_features() const { return item_features_; }
  // Labels of the dataset rows ([n_inters]).
  const std::vector<float>& labels() const { return labels_; }

 private:
  const config::Config& config_;
  const data::SplitDataset& split_;
  int64_t n_users_, n_items_;
  data::FeatureSchema schema_;
  std::vector<float> labels_;
  FeatureColumns user_features_, item_features_, inter_features_;
  models::ItemFeatureColumns item_columns_{item_features_.columns()};  // the models' view
  ContextRows rows_;
  data::InteractionMatrix train_;
  std::vector<int64_t> item_count_;
  // Ranking modes only: each split's user → items, and train ∪ valid (the test's mask).
  data::InteractionMatrix valid_items_, test_items_, train_valid_;
  std::unique_ptr<tasks::EvaluationSource> valid_source_, test_source_;
};

}  // namespace recbole::tasks

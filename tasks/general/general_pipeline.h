#pragma once
// The general task (RecBole's GENERAL models): user–item interactions. The splits become CSR
// matrices once (train, valid, test, and train ∪ valid, the test-time history); a query is a
// user, ranked against every item (or sampled candidates) with its history masked; training
// sources are pairs with sampled negatives, pointwise samples with labels, or user rows.
#include "recbole/data/interaction_matrix.h"
#include "recbole/data/split.h"
#include "tasks/task_pipeline.h"

namespace recbole::tasks {

class GeneralPipeline : public TaskPipeline {
 public:
  // Throws ConfigError for the labeled evaluation mode (this task has no labels).
  // inter_times: the interactions' time field (indexed by Split::rows), for the models that
  // weigh interactions by time; null when the dataset has none.
  GeneralPipeline(const config::Config& config, const data::SplitDataset& split, int64_t n_users,
                  int64_t n_items, const std::vector<double>* inter_times = nullptr);
  // Over a loaded dataset (which outlives the pipeline): its sizes and its time field when that
  // is loaded as a float column.
  GeneralPipeline(const config::Config& config, const data::Dataset& dataset,
                  const data::SplitDataset& split);

  models::ModelContext model_context(const DeviceManager& device) const override;
  std::unique_ptr<TrainingSource> training_source(models::InputType input, const std::string& model,
                                                  int rank, int world_size) const override;
  const tasks::EvaluationSource& valid() const override { return valid_source_; }
  const tasks::EvaluationSource& test() const override { return test_source_; }
  const std::vector<int64_t>& item_train_count() const override { return item_count_; }
  int64_t n_items() const override { return n_items_; }
  SplitSizes split_sizes() const override;

 private:
  const config::Config& config_;
  const data::SplitDataset& split_;
  // The interactions' time field (indexed by Split::rows); null when the dataset has none.
  const std::vector<double>* inter_times_;
  int64_t n_users_, n_items_;
  data::InteractionMatrix train_, valid_, test_, train_valid_;
  std::vector<int64_t> item_count_;
  tasks::UserRankingSource valid_source_, test_source_;
  data::TrainInteractions train_interactions_{split_.train, inter_times_};  // the models' view
};

}  // namespace recbole::tasks

#include "tasks/general/general_pipeline.h"

#include "tasks/general/interaction_sources.h"

#include "recbole/config/config.h"
#include "recbole/config/eval_mode.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"

namespace recbole::tasks {
namespace {

// The labeled mode needs a label per evaluated pair; the general task has none.
void refuse_labeled_mode(const config::Config& config) {
  const YAML::Node mode = config.node("eval_args")["mode"];
  if (!mode || !mode.IsMap()) return;
  for (const char* phase : {"valid", "test"})
    if (!config::EvalMode::parse(mode[phase].as<std::string>())->ranking())
      throw ConfigError(config.source("eval_args") + ": eval_args.mode." + phase +
                        ": labeled evaluation (value metrics such as AUC, RMSE) needs labelled "
                        "data, which the general task does not have; expected full, uniN or popN");
}

std::vector<int64_t> item_counts(const std::vector<int32_t>& items, int64_t n_items) {
  std::vector<int64_t> counts(static_cast<size_t>(n_items), 0);
  for (int32_t i : items) ++counts[static_cast<size_t>(i)];
  return counts;
}

// The dataset's time field when it is loaded as a float column, else null.
const std::vector<double>* inter_time_column(const data::Dataset& dataset) {
  const std::string& field = dataset.options().time_field;
  if (!dataset.has_inter_field(field) ||
      dataset.inter_table().column(field).type != data::FieldType::kFloat)
    return nullptr;
  return &dataset.inter_floats(field);
}

}  // namespace

GeneralPipeline::GeneralPipeline(const config::Config& config, const data::Dataset& dataset,
                                 const data::SplitDataset& split)
    : GeneralPipeline(config, split, dataset.n_users(), dataset.n_items(),
                      inter_time_column(dataset)) {}

GeneralPipeline::GeneralPipeline(const config::Config& config, const data::SplitDataset& split,
                                 int64_t n_users, int64_t n_items,
                                 const std::vector<double>* inter_times)
    : config_(config),
      split_(split),
      inter_times_(inter_times),
      n_users_(n_users),
      n_items_(n_items),
      train_(n_users_, n_items_, split.train.users, split.train.items),
      valid_(n_users_, n_items_, split.valid.users, split.valid.items),
      test_(n_users_, n_items_, split.test.users, split.test.items),
      train_valid_(data::InteractionMatrix::merge(train_, valid_)),
      item_count_(item_counts(split.train.items, n_items_)),
      // Validation masks the training items; the test masks train and valid.
      valid_source_(valid_, &train_),
      test_source_(test_, &train_valid_) {
  refuse_labeled_mode(config);
  // Repeatable recommendation (nothing masked) is the sequential task's evaluation.
  if (config.get_bool("repeatable"))
    throw ConfigError(config.source("repeatable") +
                      ": repeatable: true is for sequential models (no history masked); the "
                      "general task masks each user's history: expected false");
}

TaskPipeline::SplitSizes GeneralPipeline::split_sizes() const {
  return {split_.train.size(), split_.valid.size(), split_.test.size(), "interactions"};
}

models::ModelContext GeneralPipeline::model_context(const DeviceManager& device) const {
  models::ModelContext ctx{config_, n_users_, n_items_, train_, device};
  ctx.preload_weights = preload_weights_;
  ctx.parts.provide(train_interactions_);
  return ctx;
}

std::unique_ptr<TrainingSource> GeneralPipeline::training_source(models::InputType input,
                                                                 const std::string& model, int rank,
                                                                 int world_size) const {
  const InteractionData data{split_.train.users, split_.train.items, train_, item_count_};
  return make_training_source(input, model, data,
                              source_settings_from_config(config_, rank, world_size));
}

}  // namespace recbole::tasks

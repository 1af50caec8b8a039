#include "recbole/pipeline/task_pipeline.h"

#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/preload_weight.h"
#include "recbole/pipeline/context_pipeline.h"
#include "recbole/pipeline/general_pipeline.h"
#include "recbole/pipeline/knowledge_pipeline.h"
#include "recbole/pipeline/sequential_pipeline.h"
#include "recbole/utils/error.h"

namespace recbole::pipeline {

namespace {

std::unique_ptr<TaskPipeline> pipeline_of(models::Task task, const config::Config& config,
                                          const data::Dataset& dataset,
                                          const data::SplitDataset& split) {
  if (task == models::Task::kGeneral)
    return std::make_unique<GeneralPipeline>(config, split, dataset.n_users(), dataset.n_items(),
                                             inter_time_column(dataset));
  if (task == models::Task::kSequential)
    return std::make_unique<SequentialPipeline>(config, dataset);
  if (task == models::Task::kContext)
    return std::make_unique<ContextPipeline>(config, dataset, split);
  if (task == models::Task::kKnowledge)
    return std::make_unique<KnowledgePipeline>(config, dataset, split);
  return nullptr;
}

}  // namespace

std::unique_ptr<TaskPipeline> make_task_pipeline(models::Task task, const config::Config& config,
                                                 const data::Dataset& dataset,
                                                 const data::SplitDataset& split) {
  if (std::unique_ptr<TaskPipeline> p = pipeline_of(task, config, dataset, split)) {
    p->set_preload_weights(&dataset.preload_weights().by_field);
    return p;
  }
  throw ConfigError("model: " + config.model() + " is a " + models::task_name(task) +
                    " model, and the " + models::task_name(task) +
                    " task has no pipeline in this version");
}

}  // namespace recbole::pipeline

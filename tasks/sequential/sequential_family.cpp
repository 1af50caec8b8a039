// The sequential task family (RecBole's SEQUENTIAL models): next-item prediction from each user's
// time-ordered history; the pipeline cuts its own per-user samples (no interaction split).
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "tasks/sequential/sequential_pipeline.h"
#include "tasks/sequential/sequential_serving.h"
#include "tasks/task_family.h"

namespace recbole::tasks {

RECBOLE_REGISTER_FAMILY(sequential) {
  TaskFamily f;
  f.name = "sequential";
  f.description = "next item from each user's time-ordered history";
  f.help_order = 1;
  f.pipeline = [](const config::Config& config, const data::Dataset& dataset,
                  const data::SplitDataset*) -> std::unique_ptr<TaskPipeline> {
    return std::make_unique<SequentialPipeline>(config, dataset);
  };
  f.serving = serving::sequential_serving_hooks();
  register_family(std::move(f));
}

}  // namespace recbole::tasks

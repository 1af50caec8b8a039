// The context task family (RecBole's CONTEXT models): labelled interaction rows with the features
// of their user and item, split by eval_args.
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "tasks/context/context_pipeline.h"
#include "tasks/context/context_serving.h"
#include "tasks/task_family.h"

namespace recbole::tasks {

RECBOLE_REGISTER_FAMILY(context) {
  TaskFamily f;
  f.name = "context";
  f.description = "labelled rows with user and item features (click-through rate)";
  f.help_order = 2;
  f.split = interaction_split;
  f.pipeline = pipeline_over_split<ContextPipeline>();
  f.serving = serving::context_serving_hooks();
  register_family(std::move(f));
}

}  // namespace recbole::tasks

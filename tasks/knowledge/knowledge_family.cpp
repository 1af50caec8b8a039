// The knowledge task family (RecBole's KNOWLEDGE models): the general task's interactions and
// evaluation, plus the dataset's knowledge graph.
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "tasks/knowledge/knowledge_pipeline.h"
#include "tasks/knowledge/knowledge_serving.h"
#include "tasks/task_family.h"

namespace recbole::tasks {

RECBOLE_REGISTER_FAMILY(knowledge) {
  TaskFamily f;
  f.name = "knowledge";
  f.description = "interactions and a knowledge graph over the items";
  f.help_order = 3;
  f.split = interaction_split;
  f.pipeline = pipeline_over_split<KnowledgePipeline>();
  f.serving = serving::knowledge_serving_hooks();
  register_family(std::move(f));
}

}  // namespace recbole::tasks

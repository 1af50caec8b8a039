// The general task family (RecBole's GENERAL models): user–item interactions, split by eval_args;
// a query is a user, ranked against every item with the history masked. Its serving section is
// the common one (vocabularies, history): a query sends users.
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "tasks/general/general_pipeline.h"
#include "tasks/task_family.h"

namespace recbole::tasks {

RECBOLE_REGISTER_FAMILY(general) {
  TaskFamily f;
  f.name = "general";
  f.description = "user-item interactions: every item ranked for each user";
  f.help_order = 0;
  f.split = interaction_split;
  f.pipeline = pipeline_over_split<GeneralPipeline>();
  f.serving.load = [](torch::serialize::InputArchive&, const serving::ServingSection&,
                      const std::string&) { return std::make_unique<serving::TaskServing>(); };
  register_family(std::move(f));
}

}  // namespace recbole::tasks

#pragma once
// Task families (RecBole's model types: general, sequential, context, knowledge, and any other):
// what a family brings to a run, registered by name as models are. A model's descriptor names
// its family (ModelDescriptor::task); run_recbole asks the family for the run's pipeline (its
// dataset view and split, the model context, the training and evaluation sources) and serving
// asks it for its checkpoint section. Nothing outside a family's folder (tasks/<family>/) names
// the family.
//
// A shipped family registers itself from its own folder:
//   RECBOLE_REGISTER_FAMILY(general) { register_family({...}); }
// inside namespace recbole::tasks; the build lists those lines (cmake/registry_list.cmake) into
// register_builtin_families(). A program adds its own family with register_family.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tasks/serving_section.h"
#include "tasks/task_pipeline.h"

namespace recbole::config {
class Config;
}
namespace recbole::data {
class Dataset;
struct SplitDataset;
}  // namespace recbole::data

namespace recbole::tasks {

struct TaskFamily {
  std::string name;         // as models' descriptors name it: "general", "sequential", ...
  std::string description;  // one line, for --help
  // Where the family's models stand in --help (lower first; ties by name).
  int help_order = 100;
  // The family's split of a loaded dataset, made before the pipeline so that the ranks of a
  // distributed run compare it first (check_ranks_agree): the interaction split (general,
  // context, knowledge: interaction_split below), or empty for a family that splits inside its
  // pipeline (the sequential task's per-user samples).
  std::function<std::shared_ptr<const data::SplitDataset>(const config::Config&,
                                                          const data::Dataset&)>
      split;
  // The run's pipeline over a loaded dataset and the family's split (nullptr without one); both
  // outlive it.
  std::function<std::unique_ptr<TaskPipeline>(const config::Config&, const data::Dataset&,
                                              const data::SplitDataset*)>
      pipeline;
  // The family's section of a best-model checkpoint: written at training time from the
  // pipeline, read back into the query side at load time (serving/recommender.h). A family
  // without `load` cannot be served.
  serving::TaskServingHooks serving;
};

// TaskFamily::pipeline for a family whose pipeline is built from the run's config, the loaded
// dataset and the family's split: Pipeline(config, dataset, split).
template <class Pipeline>
auto pipeline_over_split() {
  return [](const config::Config& config, const data::Dataset& dataset,
            const data::SplitDataset* split) -> std::unique_ptr<TaskPipeline> {
    return std::make_unique<Pipeline>(config, dataset, *split);
  };
}

// Registers (replaces) a family.
void register_family(TaskFamily family);

// The family called `name`; an unknown name is a ConfigError listing the known ones.
const TaskFamily& find_family(const std::string& name);

// Every registered family, in help order.
std::vector<TaskFamily> registered_families();

// "  general:\n    BPR   pairwise   Bayesian personalised ranking ...\n" per family in help
// order, for --help: every registered model under its family.
std::string models_help_text();

// RecBole's split of the interactions by eval_args (data::split_dataset), for TaskFamily::split.
std::shared_ptr<const data::SplitDataset> interaction_split(const config::Config& config,
                                                            const data::Dataset& dataset);

// The pipeline of `family` over a loaded dataset (which must outlive it) and the family's split
// of it (null for a family without one; the pipeline keeps it), with the dataset's
// preload_weight matrices handed to the models it builds.
std::unique_ptr<TaskPipeline> make_task_pipeline(const TaskFamily& family,
                                                 const config::Config& config,
                                                 const data::Dataset& dataset,
                                                 std::shared_ptr<const data::SplitDataset> split);

// Registers every family shipped with recbole-cpp (idempotent); generated at configure time
// from the RECBOLE_REGISTER_FAMILY lines of tasks/.
void register_builtin_families();

#define RECBOLE_REGISTER_FAMILY(id) void register_family_##id()

}  // namespace recbole::tasks

#include "tasks/knowledge/knowledge_pipeline.h"

#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "tasks/knowledge/kg_triple_source.h"

namespace recbole::tasks {
namespace {

const data::KnowledgeGraph& graph_of(const config::Config& config, const data::Dataset& dataset) {
  if (const data::KnowledgeGraph* g = dataset.knowledge_graph()) return *g;
  throw ConfigError(config.source("load_col") + ": load_col: has no kg entry, but " +
                    config.model() + " is a knowledge model and reads " + dataset.name() +
                    ".kg and " + dataset.name() +
                    ".link; expected load_col with kg: [head_id, relation_id, tail_id] and "
                    "link: [item_id, entity_id] (the knowledge preset sets them unless load_col "
                    "is given)");
}

}  // namespace

KnowledgePipeline::KnowledgePipeline(const config::Config& config, const data::Dataset& dataset,
                                     const data::SplitDataset& split)
    : GeneralPipeline(config, dataset, split), config_(config), graph_(graph_of(config, dataset)) {}

models::ModelContext KnowledgePipeline::model_context(const DeviceManager& device) const {
  models::ModelContext ctx = GeneralPipeline::model_context(device);
  ctx.parts.provide(graph_);
  return ctx;
}

std::unique_ptr<TrainingSource> KnowledgePipeline::training_source(models::InputType input,
                                                                   const std::string& model,
                                                                   int rank, int world_size) const {
  return std::make_unique<KgTripleSource>(
      GeneralPipeline::training_source(input, model, rank, world_size), graph_,
      source_settings_from_config(config_, rank, world_size),
      models::find_model(model).auxiliary_batches);
}

}  // namespace recbole::tasks

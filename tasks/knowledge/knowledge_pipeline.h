#pragma once
// The knowledge task (RecBole's KNOWLEDGE models: CKE, KGCN, ...): the general task's
// interactions, splits, sources and ranking evaluation, plus the dataset's knowledge graph
// (data/knowledge_graph.h) for the models, and — for models that train on it — a batch of KG
// triples beside each recommendation batch (kg_triple_source.h). Everything built from
// interactions (the models' graphs, neighbour tables) comes from the training split only.
#include "tasks/general/general_pipeline.h"

namespace recbole::data {
class KnowledgeGraph;
}

namespace recbole::tasks {

class KnowledgePipeline : public GeneralPipeline {
 public:
  // Throws ConfigError when the dataset was loaded without its knowledge graph (load_col has
  // no kg / link entry), naming the key.
  KnowledgePipeline(const config::Config& config, const data::Dataset& dataset,
                    const data::SplitDataset& split);

  models::ModelContext model_context(const DeviceManager& device) const override;
  std::unique_ptr<TrainingSource> training_source(models::InputType input, const std::string& model,
                                                  int rank, int world_size) const override;
  const data::KnowledgeGraph& graph() const { return graph_; }

 private:
  const config::Config& config_;
  const data::KnowledgeGraph& graph_;
};

}  // namespace recbole::tasks

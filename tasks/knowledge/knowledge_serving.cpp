#include "tasks/knowledge/knowledge_serving.h"

#include <string>
#include <utility>
#include <vector>

#include "recbole/utils/error.h"
#include "tasks/knowledge/knowledge_pipeline.h"

namespace recbole::serving {
namespace {

torch::Tensor int32_tensor(const std::vector<int32_t>& v) {
  return torch::from_blob(const_cast<int32_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt32)
      .clone();
}

class KnowledgeServing : public TaskServing {
 public:
  explicit KnowledgeServing(data::KnowledgeGraph graph) : graph_(std::move(graph)) {}

  models::ModelContext model_context(const config::Config& config, const ServingSection& section,
                                     const DeviceManager& device) const override {
    models::ModelContext ctx = TaskServing::model_context(config, section, device);
    ctx.parts.provide(graph_);
    return ctx;
  }

 private:
  data::KnowledgeGraph graph_;
};

SectionWriter prepare_knowledge_section(const tasks::TaskPipeline& task) {
  const auto* kg = dynamic_cast<const tasks::KnowledgePipeline*>(&task);
  if (kg == nullptr) throw Error("knowledge serving: the run's pipeline is not the knowledge one");
  const data::KnowledgeGraph& g = kg->graph();
  const torch::Tensor counts =
      torch::tensor({g.n_entities(), g.n_relations(), g.n_linked_items()}, torch::kInt64);
  const torch::Tensor heads = int32_tensor(g.heads()), relations = int32_tensor(g.relations()),
                      tails = int32_tensor(g.tails());
  return [counts, heads, relations, tails](torch::serialize::OutputArchive& archive) {
    archive.write("counts", counts);
    archive.write("heads", heads);
    archive.write("relations", relations);
    archive.write("tails", tails);
  };
}

std::vector<int32_t> read_ids(torch::serialize::InputArchive& archive, const char* key,
                              int64_t below, const std::string& path) {
  torch::Tensor t;
  if (!archive.try_read(key, t) || t.dim() != 1 || t.scalar_type() != torch::kInt32)
    throw Error("checkpoint " + path + ": its knowledge serving section has no valid '" + key +
                "' entry (damaged, or written by another version)");
  t = t.contiguous();
  std::vector<int32_t> v(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + t.numel());
  for (int32_t x : v)
    if (x < 1 || x >= below)
      throw Error("checkpoint " + path + ": its knowledge graph is damaged ('" + key +
                  "' holds an id out of range)");
  return v;
}

std::unique_ptr<TaskServing> load_knowledge_section(torch::serialize::InputArchive& section,
                                                    const ServingSection& common,
                                                    const std::string& path) {
  torch::Tensor counts;
  if (!section.try_read("counts", counts) || counts.numel() != 3 ||
      counts.scalar_type() != torch::kInt64)
    throw Error("checkpoint " + path + ": its knowledge serving section has no valid 'counts'");
  const int64_t n_entities = counts[0].item<int64_t>(), n_relations = counts[1].item<int64_t>(),
                n_linked = counts[2].item<int64_t>();
  if (n_entities < common.n_items || n_relations < 2)
    throw Error("checkpoint " + path + ": its knowledge graph's sizes are damaged");
  std::vector<int32_t> heads = read_ids(section, "heads", n_entities, path);
  std::vector<int32_t> relations = read_ids(section, "relations", n_relations - 1, path);
  std::vector<int32_t> tails = read_ids(section, "tails", n_entities, path);
  if (heads.size() != relations.size() || heads.size() != tails.size())
    throw Error("checkpoint " + path + ": its knowledge graph's columns differ in length");
  return std::make_unique<KnowledgeServing>(
      data::KnowledgeGraph::from_ids(n_entities, n_relations - 2, n_linked, std::move(heads),
                                     std::move(relations), std::move(tails)));
}

}  // namespace

TaskServingHooks knowledge_serving_hooks() {
  return {prepare_knowledge_section, load_knowledge_section};
}

}  // namespace recbole::serving

#pragma once
// A task pipeline: what turns a loaded dataset into the parts of a run — the family's split, the
// context models are built from, the training source the model's input type asks for, the
// evaluation sources of the valid and test splits, and the facts the evaluator needs. run() is
//   config → dataset → task family's pipeline → model → trainer → evaluator,
// and only the pipeline knows the task. Each family builds its own (TaskFamily::pipeline,
// tasks/task_family.h): tasks/<family>/<family>_pipeline.h.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/model.h"
#include "tasks/evaluation_source.h"
#include "tasks/training_source.h"

namespace recbole::data {
class Dataset;
struct SplitDataset;
}  // namespace recbole::data

namespace recbole::tasks {

class TaskPipeline {
 public:
  virtual ~TaskPipeline() = default;

  // What models are built from (references into this pipeline: it must outlive the model).
  virtual models::ModelContext model_context(const DeviceManager& device) const = 0;
  // The training source for a model of `input` type (nullptr for fitted-once models); this
  // rank's part of every batch.
  virtual std::unique_ptr<TrainingSource> training_source(models::InputType input,
                                                          const std::string& model, int rank,
                                                          int world_size) const = 0;
  virtual const tasks::EvaluationSource& valid() const = 0;
  virtual const tasks::EvaluationSource& test() const = 0;
  // [n_items] training interactions per item (popularity metrics, the popN sampler).
  virtual const std::vector<int64_t>& item_train_count() const = 0;
  virtual int64_t n_items() const = 0;
  // What the training, valid and test parts hold, in the task's unit (interactions for the
  // general task, samples for the sequential one), for the log and the run's statistics.
  struct SplitSizes {
    int64_t train = 0, valid = 0, test = 0;
    const char* unit = "interactions";
  };
  virtual SplitSizes split_sizes() const = 0;

  // preload_weight's matrices (the dataset's, which outlives the pipeline): model_context()
  // hands them to the model. Set by make_task_pipeline; a pipeline built by hand has none.
  void set_preload_weights(const std::map<std::string, torch::Tensor>* weights) {
    preload_weights_ = weights;
  }
  // Keeps `owned` alive as long as the pipeline: what a family's factory built it from (the
  // split it references). Released after the derived pipeline's members.
  void hold(std::shared_ptr<const void> owned) { held_.push_back(std::move(owned)); }

 protected:
  const std::map<std::string, torch::Tensor>* preload_weights_ = nullptr;

 private:
  std::vector<std::shared_ptr<const void>> held_;
};

}  // namespace recbole::tasks

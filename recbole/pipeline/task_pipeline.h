#pragma once
// A task pipeline: what turns a split dataset into the parts of a run — the context models are
// built from, the training source the model's input type asks for, the evaluation sources of
// the valid and test splits, and the facts the evaluator needs. run() is
//   config → dataset → split → task pipeline → model → trainer → evaluator,
// and only the pipeline knows the task. The general task is pipeline/general_pipeline.h; the
// sequential, context and knowledge pipelines plug in beside it (make_task_pipeline).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/model.h"
#include "recbole/evaluator/evaluation_source.h"
#include "recbole/pipeline/training_source.h"

namespace recbole::data {
class Dataset;
struct SplitDataset;
}  // namespace recbole::data

namespace recbole::pipeline {

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
  virtual const evaluator::EvaluationSource& valid() const = 0;
  virtual const evaluator::EvaluationSource& test() const = 0;
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

 protected:
  const std::map<std::string, torch::Tensor>* preload_weights_ = nullptr;
};

// The pipeline of `task` over a loaded and split dataset (both must outlive it); a task with no
// pipeline yet is a ConfigError naming it.
std::unique_ptr<TaskPipeline> make_task_pipeline(models::Task task, const config::Config& config,
                                                 const data::Dataset& dataset,
                                                 const data::SplitDataset& split);

}  // namespace recbole::pipeline

#pragma once
// The serving section of a best-model checkpoint: what makes the file stand alone, so that
// recbole::Recommender (recommender.h) loads it with no dataset files.
//
// A best-model checkpoint is one libtorch archive with the checksum trailer of
// recbole/runtime/checkpoint_file.h. Its top level holds the model's parameters and buffers, as
// Model::save writes them (Trainer::test reads only those), and run() adds one nested archive
// under kServingKey:
//
//   meta         string: JSON {"format": kServingFormat, "model", "task", "dataset", "n_users",
//                "n_items", "interactions" (history size), "config" (the effective config,
//                config::config_snapshot YAML), "written_at" (unix seconds of this write)}
//   user_tokens  nested {"bytes" uint8 [Σ len], "offsets" int64 [n_users + 1]}: id → token
//   item_tokens  the same for items (id 0 is "[PAD]" in both)
//   history      nested {"indptr" int64 [n_users + 1], "indices" int32 [nnz]}: each user's
//                training items, ascending — what the model reads (ItemKNN, EASE, the
//                autoencoders score from it) and what recommendations exclude by default
//   task         nested: the task family's own section (TaskServingHooks::prepare); the
//                general task writes nothing there
//
// Fitted models keep their fitted state (EASE's B, ItemKNN's and SLIM's CSR weights) in
// registered buffers, so it is in the top level with the parameters.
//
// Compatibility: a reader accepts format kServingFormat only and refuses any other by name, and
// a checkpoint without the section (written before it existed, or by a program that trains
// without run()) with an error saying so. Adding a key to meta or a new nested entry is
// compatible; changing what an existing entry means bumps kServingFormat.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "models/model.h"
#include "recbole/data/batch.h"
#include "recbole/data/interaction_matrix.h"

namespace recbole {
class DeviceManager;
namespace config {
class Config;
}
namespace data {
class Dataset;
}
namespace tasks {
class TaskPipeline;
}
}  // namespace recbole

namespace recbole::serving {

constexpr int64_t kServingFormat = 1;
constexpr const char* kServingKey = "recbole_serving";

// Writes the serving section into a checkpoint archive (Trainer::CheckpointExtras).
using SectionWriter = std::function<void(torch::serialize::OutputArchive&)>;

// The serving section of a run, prepared once from what run() holds (tokens, history and the
// task's own section become tensors that never change), then written into every best-model
// checkpoint of the run. The dataset and the pipeline need not outlive the call.
SectionWriter serving_section_writer(const config::Config& config, const data::Dataset& dataset,
                                     const tasks::TaskPipeline& task, const DeviceManager& device);

// The same from parts, for a run that has no Dataset (tests, programs that build a model by
// hand): tokens of ids 0 .. n − 1 (token 0 is "[PAD]"), the history, the task's section writer
// (may be empty).
SectionWriter serving_section_writer(const config::Config& config, const std::string& task,
                                     std::vector<std::string> user_tokens,
                                     std::vector<std::string> item_tokens,
                                     const data::InteractionMatrix& history,
                                     SectionWriter task_section = {});

// A checkpoint's serving section, read back (no model built yet).
struct ServingSection {
  nlohmann::json meta;
  std::string model, task, dataset;
  int64_t n_users = 0, n_items = 0;
  std::string config_yaml;
  int64_t written_at = 0;
  std::vector<std::string> user_tokens, item_tokens;
  data::InteractionMatrix history;
};

// What a task family adds to serving: it writes its own section beside the common one at
// training time and reads it back into the query side (TaskFamily::serving). The general task's
// query side is this default class; another family (sequential: the users' item sequences;
// context: feature tables) derives its own.
class TaskServing {
 public:
  virtual ~TaskServing() = default;
  // What the model is rebuilt from: by default {config, n_users, n_items, history, device}.
  virtual models::ModelContext model_context(const config::Config& config,
                                             const ServingSection& section,
                                             const DeviceManager& device) const;
  // The query batch scoring these known users (CPU tensors): by default batch.users.
  virtual data::Batch user_batch(const std::vector<int64_t>& users) const;
  // The one-row query batch scoring a user the model never saw from an item history given by a
  // caller (ids in [1, n_items), in the caller's order), for a model whose scores_from_history()
  // is true: by default batch.history [1, n_items] 0/1 float32 and the padding user 0.
  virtual data::Batch history_batch(const std::vector<int32_t>& history, int64_t n_items) const;
  // The scores of every item for each row of a query batch (user_batch or history_batch, CPU):
  // [B, n_items] on the model's device. By default model.full_sort_predict(batch on the device).
  virtual torch::Tensor scores(models::Model& model, const data::Batch& batch,
                               const DeviceManager& device) const;
};

struct TaskServingHooks {
  // At training time: the task section's writer for this pipeline (called once by
  // serving_section_writer; the closure must hold only what never changes). Empty: no section.
  std::function<SectionWriter(const tasks::TaskPipeline&)> prepare;
  // At load time: the query side, from the task section (`task` in the layout above); `path`
  // names the checkpoint in errors.
  std::function<std::unique_ptr<TaskServing>(torch::serialize::InputArchive& section,
                                             const ServingSection& common, const std::string& path)>
      load;
};

// Reads the serving section of a loaded checkpoint archive; `path` names the file in errors.
// Throws recbole::Error when the section is missing, of another format, or damaged. `task_out`
// receives the task's nested section.
ServingSection read_serving_section(torch::serialize::InputArchive& checkpoint,
                                    const std::string& path,
                                    torch::serialize::InputArchive* task_out = nullptr);

// The query side of `section`'s task (its family's serving.load); an Error when the task is
// unknown or its family cannot be served.
std::unique_ptr<TaskServing> load_task_serving(torch::serialize::InputArchive& task_section,
                                               const ServingSection& section,
                                               const std::string& path);

// Tokens ↔ a (bytes, offsets) tensor pair, the layout of user_tokens / item_tokens.
void write_tokens(torch::serialize::OutputArchive& archive, const std::vector<std::string>& tokens);
std::vector<std::string> read_tokens(torch::serialize::InputArchive& archive,
                                     const std::string& what);

}  // namespace recbole::serving

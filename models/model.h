#pragma once
// The model interface, model descriptors and the model registry.
//
// Every model registers a descriptor {name, task family, input type, description, its config
// keys, factory} from its own file (RECBOLE_REGISTER_MODEL; the build lists those files, see
// cmake/registry_list.cmake). The family (tasks/task_family.h) says which pipeline prepares its
// data; the input type says which training source feeds it (RecBole's ModelType and InputType).
// A model creates every parameter and every output on the device manager's device.
//
// Training: the trainer calls train_step() once per batch of the training source, and the
// hooks around epochs and evaluations. The default train_step is zero-grad / calculate_loss /
// backward / finish_gradients / step; a model that trains differently overrides it (two
// alternating optimisers, annealing). Fitted-once models (input type kFitOnce) are fitted by
// fit() instead. What a model offers beyond this core (factor scores, several passes an epoch,
// an epoch of its own, ...) is a capability: models/capabilities.h.
//
// Tensors: ids are int64; scores are float32. n_users / n_items include id 0 (the padding).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "recbole/config/key_decl.h"
#include "recbole/data/batch.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/utils/error.h"

namespace recbole::config {
class Config;
}

namespace recbole::models {

// RecBole's InputType, plus the two shapes RecBole expresses otherwise: what a training batch
// holds.
enum class InputType {
  kPairwise,   // users, items (positive), neg_items
  kPointwise,  // users, items, labels (1 for observed, 0 for sampled negatives)
  kUserRows,   // users and history (their training rows, dense per batch)
  kNextItem,   // item sequences and their lengths (models/layers/sequence.h), items (the target)
  kFitOnce,    // no batches: fit() on the training matrix
};
const char* input_type_name(InputType type);  // "pairwise", "pointwise", ...

// What a task family adds to a model's context (its dataset view: the knowledge graph, the
// feature tables, ...), found by type. A part type states what it is for the error a model gets
// when its family does not provide it: `static constexpr const char* kPart = "...";`.
class ContextParts {
 public:
  template <typename T>
  void provide(const T& part) {
    parts_[std::type_index(typeid(T))] = &part;
  }
  // The part of type T, or nullptr.
  template <typename T>
  const T* find() const {
    const auto it = parts_.find(std::type_index(typeid(T)));
    return it == parts_.end() ? nullptr : static_cast<const T*>(it->second);
  }

 private:
  std::map<std::type_index, const void*> parts_;
};

// What a model is built from. References must outlive the model.
struct ModelContext {
  const config::Config& config;
  int64_t n_users;                       // including the pad id 0
  int64_t n_items;                       // including the pad id 0
  const data::InteractionMatrix& train;  // user → items of the training split (CPU)
  const DeviceManager& device;
  // preload_weight: per id field named there, its rows by remapped id ([num ids, width]
  // float32 on the CPU; row 0, the padding, zeros), for a model that starts from given vectors
  // (RecBole's dataset.get_preload_weight). nullptr or empty when the key is not set.
  const std::map<std::string, torch::Tensor>* preload_weights = nullptr;
  // The family's parts (they must outlive the model; a model rebuilt from a checkpoint gets what
  // the family's serving section restores).
  ContextParts parts{};

  // The part of type T, or a ConfigError naming the model and what it needs: the model was
  // built in a family that does not provide it.
  template <typename T>
  const T& need() const {
    if (const T* p = parts.find<T>()) return *p;
    throw ConfigError("model " + config_model_name() + " needs " + T::kPart +
                      ", which its data does not provide");
  }

 private:
  std::string config_model_name() const;
};

// What the trainer offers a training step.
class TrainStep {
 public:
  virtual ~TrainStep() = default;
  // The optimizer of parameter group k (Model::optimizer_groups), built from `learner`.
  virtual torch::optim::Optimizer& optimizer(size_t k = 0) = 0;
  // After backward: averages the gradients over ranks (nothing in one process), then clips
  // them when clip_grad_norm is set.
  virtual void finish_gradients() = 0;
};

struct ModelDescriptor;

class Model : public torch::nn::Module {
 public:
  Model(std::string name, const ModelContext& ctx);
  ~Model() override = default;

  const std::string& name() const { return name_; }
  int64_t n_users() const { return n_users_; }
  int64_t n_items() const { return n_items_; }
  const DeviceManager& device_manager() const { return device_; }
  // The registered descriptor of this model's name.
  const ModelDescriptor& descriptor() const;
  // What a training batch holds for this model: its descriptor's input type, unless the
  // model's setting changes it (a sequential model with loss_type BPR trains on pairs).
  virtual InputType input_type() const;
  bool fitted_once() const { return input_type() == InputType::kFitOnce; }

  // kFitOnce: fits on ctx.train. Others: nothing.
  virtual void fit() {}

  // Scalar loss on the device for one training batch.
  virtual torch::Tensor calculate_loss(const data::Batch& batch);

  // Scores of every item for each row of a query batch (general: batch.users).
  // → [B, n_items] float32 on the device.
  virtual torch::Tensor full_sort_predict(const data::Batch& batch) = 0;

  // Scores of the rows' (query, batch.items) pairs → [B] float32 on the device.
  // Default: gathers from full_sort_predict.
  virtual torch::Tensor predict(const data::Batch& batch);

  // ---- Training hooks (defaults do nothing or the plain step) ----
  virtual void on_epoch_start(int64_t epoch) { (void)epoch; }
  virtual void on_epoch_end(int64_t epoch) { (void)epoch; }
  // Before every validation and the test (e.g. to refresh cached propagated embeddings).
  virtual void before_evaluation() {}
  // The parameter groups that each get an optimizer of the configured learner.
  // Default: one group with every parameter.
  virtual std::vector<std::vector<torch::Tensor>> optimizer_groups() { return {parameters()}; }
  // One optimisation step on one batch (on the device); returns the batch's loss (detached).
  virtual torch::Tensor train_step(const data::Batch& batch, TrainStep& step);

  // ---- Resume (a run stopped part-way through an epoch continues exactly) ----
  // What training changes besides parameters and buffers: counters (KL annealing), what
  // on_epoch_start / on_pass_start prepared (clusters, augmented graphs, the phase). A resumed
  // run does not call those hooks again for the epoch and pass it continues in: it loads this.
  // Default: nothing (a model whose hooks only set what they recompute from (seed, epoch) at
  // each call still needs to save it here). The model contract test stops and resumes every
  // model mid-epoch and compares with an uninterrupted run.
  virtual void save_training_state(torch::serialize::OutputArchive& archive) const {
    (void)archive;
  }
  virtual void load_training_state(torch::serialize::InputArchive& archive) { (void)archive; }

  // Number of trainable scalars (RecBole's "Trainable parameters").
  int64_t trainable_parameter_count() const;

  // A one-line description for the log.
  virtual std::string describe() const;

 protected:
  // Registers a new [rows, cols] float32 embedding table `name`, initialised as RecBole's
  // initialiser does (layers::new_table: drawn on the CPU from the seeded generator, so that a
  // seed gives the same weights on every device), and returns it placed on the device.
  torch::Tensor register_table(const std::string& name, int64_t rows, int64_t cols,
                               layers::Init init);

  const config::Config& config_;
  const data::InteractionMatrix& train_;

 private:
  std::string name_;
  int64_t n_users_, n_items_;
  const DeviceManager& device_;
};

using ModelFactory = std::function<std::shared_ptr<Model>(const ModelContext&)>;

struct ModelDescriptor {
  std::string name;  // the config name, e.g. "BPR"
  // The task family (tasks/task_family.h) that prepares its data: "general", "sequential", ...
  std::string task = "general";
  InputType input = InputType::kPairwise;
  std::string description;  // one line
  // The model's own config keys (config::Key builder, no category); their defaults live in
  // configs/model/<name>.yaml. A key of another model is an error naming these.
  std::vector<config::KeyDecl> keys;
  ModelFactory factory;
  // Whether each training batch carries the family's auxiliary batch beside it (the knowledge
  // task: a batch of KG triples with negative tails, RecBole's RSKG state; models that ignore
  // the KG part skip its sampling). Auxiliary-only passes (MultiPassEpoch) are offered to every
  // model of such a family.
  bool auxiliary_batches = false;
};

// Registers a model and its keys (a later registration of the same name replaces the earlier
// one).
void register_model(ModelDescriptor descriptor);

// Builds a model by config name; an unknown name is a ConfigError listing the known ones.
std::shared_ptr<Model> create_model(const std::string& name, const ModelContext& ctx);

// The descriptor of `name`; an unknown name is the same ConfigError as create_model's.
const ModelDescriptor& find_model(const std::string& name);

// Every registered descriptor, sorted by name (tasks::models_help_text groups them by family).
std::vector<ModelDescriptor> registered_models();

// Registers every model shipped with recbole-cpp (idempotent). The list is generated at
// configure time from the RECBOLE_REGISTER_MODEL lines of models/ (static libraries drop
// self-registering objects, so registration is an explicit call).
void register_builtin_models();

// Defines the registration function of a shipped model, found by the build:
//   RECBOLE_REGISTER_MODEL(BPR) { register_model({...}); }
// inside namespace recbole::models.
#define RECBOLE_REGISTER_MODEL(id) void register_model_##id()

}  // namespace recbole::models

#pragma once
// The model interface, model descriptors and the model registry.
//
// Every model registers a descriptor {name, task, input type, description, its config keys,
// factory} from its own file (RECBOLE_REGISTER_MODEL; the build lists those files, see
// cmake/model_list.cmake). The task says which pipeline prepares its data; the input type says
// which training source feeds it (RecBole's ModelType and InputType). A model creates every
// parameter and every output on the device manager's device.
//
// Training: the trainer calls train_step() once per batch of the training source, and the
// hooks around epochs and evaluations. The default train_step is zero-grad / calculate_loss /
// backward / finish_gradients / step; a model that trains differently overrides it (two
// alternating optimisers, annealing) or offers a whole fast epoch (fast_epoch, BPR's fused CPU
// path). Fitted-once models (input type kFitOnce) are fitted by fit() instead.
//
// Tensors: ids are int64; scores are float32. n_users / n_items include id 0 (the padding).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "recbole/config/key_decl.h"
#include "recbole/data/batch.h"
#include "recbole/data/feature_schema.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/data/knowledge_graph.h"
#include "recbole/utils/device_manager.h"

namespace recbole::config {
class Config;
}

namespace recbole::data {
struct Split;
}

namespace recbole::pipeline {
class TrainingSource;
}

namespace recbole::models {

// RecBole's ModelType: which task pipeline prepares the data.
enum class Task { kGeneral, kSequential, kContext, kKnowledge };
// What one pass over the training source yields: its own batches (the input type's), the
// knowledge graph's triples alone (KGAT's KG pass; knowledge task only), or nothing (the pass
// is skipped in this epoch: MKR's KG pass outside every kge_interval-th epoch).
enum class PassBatches { kMain, kKnowledgeGraph, kSkip };
// RecBole's InputType, plus the two shapes RecBole expresses otherwise: what a training batch
// holds.
enum class InputType {
  kPairwise,   // users, items (positive), neg_items
  kPointwise,  // users, items, labels (1 for observed, 0 for sampled negatives)
  kUserRows,   // users and history (their training rows, dense per batch)
  kNextItem,   // item_seq, item_seq_len, items (the target)
  kFitOnce,    // no batches: fit() on the training matrix
};
const char* task_name(Task task);             // "general", "sequential", ...
const char* input_type_name(InputType type);  // "pairwise", "pointwise", ...

// What a model is built from. References must outlive the model.
struct ModelContext {
  const config::Config& config;
  int64_t n_users;                       // including the pad id 0
  int64_t n_items;                       // including the pad id 0
  const data::InteractionMatrix& train;  // user → items of the training split (CPU)
  const DeviceManager& device;
  // Context task: the feature fields of the run (nullptr for the other tasks).
  const data::FeatureSchema* features = nullptr;
  // Context task: the item-side input columns by name, rows indexed by item id ([n_items, ...]
  // CPU, data/feature_schema.h layouts), for scoring every item of a user (full_sort_predict);
  // nullptr elsewhere.
  const std::vector<std::pair<std::string, torch::Tensor>>* item_features = nullptr;
  // Knowledge task: the knowledge graph (nullptr for the other tasks).
  const data::KnowledgeGraph* knowledge = nullptr;
  // preload_weight: per id field named there, its rows by remapped id ([num ids, width]
  // float32 on the CPU; row 0, the padding, zeros), for a model that starts from given vectors
  // (RecBole's dataset.get_preload_weight). nullptr or empty when the key is not set.
  const std::map<std::string, torch::Tensor>* preload_weights = nullptr;
  // General and knowledge tasks: the training interactions one row each, in split order
  // (duplicates kept), and the dataset's time field indexed by Split::rows (null when the
  // dataset has no float time field), for models that weigh interactions by time (DiffRec's
  // time-aware rows). Both null elsewhere (and in a model rebuilt from a checkpoint).
  const data::Split* train_split = nullptr;
  const std::vector<double>* inter_times = nullptr;
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

// A model's own epoch loop, used instead of the trainer's batch loop (see Model::fast_epoch).
class FastEpoch {
 public:
  virtual ~FastEpoch() = default;
  // Trains the rest of the source's epoch (started, possibly part-way through: a resumed run),
  // adding each batch's loss to loss_sum. after_batch() runs after every batch; when it returns
  // true the run is being stopped, and the epoch returns at once, between two batches.
  virtual void train_epoch(double& loss_sum, const std::function<bool()>& after_batch) = 0;
  // The path's own training state (optimizer moments, step count), for resume checkpoints.
  virtual void save(torch::serialize::OutputArchive& archive) const { (void)archive; }
  virtual void load(torch::serialize::InputArchive& archive) { (void)archive; }
  // One line for the log: what runs instead of the generic path.
  virtual std::string describe() const = 0;
};

// What a model may look at to decide whether its fast epoch applies.
struct TrainingEnv {
  const config::Config& config;
  const DeviceManager& device;
  int world_size;
  pipeline::TrainingSource& source;
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
  InputType input_type() const;
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

  // Scores of dynamic negative sampling's candidates: batch holds candidate_num blocks of n
  // rows, row k · n + j differing from row j only in its item (and that item's own features).
  // → [candidate_num · n] float32 on the device, predict's scores. Default: predict; a model
  // whose query side costs more than its item side (a sequence encoder) computes it once per j.
  virtual torch::Tensor predict_candidates(const data::Batch& batch, int64_t candidate_num) {
    (void)candidate_num;
    return predict(batch);
  }

  // Optional: when every score is ⟨user factor, item factor⟩, the two factor matrices
  // (users: [n_users, d], items: [n_items, d], float32 on the device), so that the CPU evaluator
  // can fuse the product with masking and top-K tile by tile. Default: none (false).
  virtual bool score_factors(torch::Tensor* users, torch::Tensor* items) const {
    (void)users;
    (void)items;
    return false;
  }

  // ---- Serving (recbole/serving/recommender.h) ----
  // Optional: when every score is x_u · W + bias, x_u the 0/1 row of the user's training items
  // and W an item-to-item weight matrix (EASE, SLIM, ItemKNN in item mode), W as a dense
  // [n_items, n_items] tensor or as CSR rows (see ItemWeights), so that a server scores a user
  // by summing the rows of W its few history items select instead of a dense product, and can
  // score an item history given by a caller. Default: none (false).
  struct ItemWeights {
    torch::Tensor dense;                    // [n_items, n_items] float32, or undefined
    torch::Tensor indptr, indices, values;  // CSR rows of W (int64, int64, float32) otherwise
    torch::Tensor bias;                     // [n_items] float32, or undefined (no bias)
  };
  virtual bool score_item_weights(ItemWeights* weights) const {
    (void)weights;
    return false;
  }
  // Whether full_sort_predict scores a row from batch.history alone when the batch carries one
  // ([B, n_items] 0/1 float32; batch.users then holds the padding user 0): a user the model
  // never saw, given by the items they interacted with (the autoencoders, Pop). A model with
  // score_item_weights is scored from a history through its weights and need not say so here.
  // Default: false (the model needs the user's own parameters).
  virtual bool scores_from_history() const { return false; }

  // ---- Training hooks (defaults do nothing or the plain step) ----
  virtual void on_epoch_start(int64_t epoch) { (void)epoch; }
  // Passes over the training source in one epoch (RecVAE: its encoder passes, then its decoder
  // passes); each pass walks the source in a new order. on_pass_start(p) runs before pass p.
  virtual int64_t passes_per_epoch() const { return 1; }
  virtual void on_pass_start(int64_t pass) { (void)pass; }
  // What pass p of epoch e walks (KGAT: its recommendation pass, then a KG pass; KTUP: blocks
  // of recommendation epochs and KG epochs). A function of (epoch, pass) alone, so that a
  // resumed run walks what the interrupted one would have.
  virtual PassBatches pass_batches(int64_t epoch, int64_t pass) const {
    (void)epoch;
    (void)pass;
    return PassBatches::kMain;
  }
  virtual void on_epoch_end(int64_t epoch) { (void)epoch; }
  // Before every validation and the test (e.g. to refresh cached propagated embeddings).
  virtual void before_evaluation() {}
  // The parameter groups that each get an optimizer of the configured learner.
  // Default: one group with every parameter.
  virtual std::vector<std::vector<torch::Tensor>> optimizer_groups() { return {parameters()}; }
  // One optimisation step on one batch (on the device); returns the batch's loss (detached).
  virtual torch::Tensor train_step(const data::Batch& batch, TrainStep& step);
  // A whole epoch of the model's own making, when it applies to `env` (e.g. BPR's fused CPU
  // path); nullptr (the default) runs the trainer's batch loop.
  virtual std::unique_ptr<FastEpoch> fast_epoch(const TrainingEnv& env) {
    (void)env;
    return nullptr;
  }

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
  Task task = Task::kGeneral;
  InputType input = InputType::kPairwise;
  std::string description;  // one line
  // The model's own config keys (config::Key builder, no category); their defaults live in
  // configs/model/<name>.yaml. A key of another model is an error naming these.
  std::vector<config::KeyDecl> keys;
  ModelFactory factory;
  // Knowledge models: whether each training batch carries a batch of KG triples with negative
  // tails (RecBole's RSKG state; models that ignore the KG part skip its sampling). KG-only
  // passes (Model::pass_batches) are offered to every knowledge model.
  bool kg_batches = false;
};

// Registers a model and its keys (a later registration of the same name replaces the earlier
// one).
void register_model(ModelDescriptor descriptor);

// Builds a model by config name; an unknown name is a ConfigError listing the known ones.
std::shared_ptr<Model> create_model(const std::string& name, const ModelContext& ctx);

// The descriptor of `name`; an unknown name is the same ConfigError as create_model's.
const ModelDescriptor& find_model(const std::string& name);

// Every registered descriptor, sorted by task, then name.
std::vector<ModelDescriptor> registered_models();

// "  BPR   general   pairwise   Bayesian personalised ranking ..." per model, grouped by task,
// for --help.
std::string models_help_text();

// Registers every model shipped with recbole-cpp (idempotent). The list is generated at
// configure time from the RECBOLE_REGISTER_MODEL lines of models/ (static libraries drop
// self-registering objects, so registration is an explicit call).
void register_builtin_models();

// Defines the registration function of a shipped model, found by the build:
//   RECBOLE_REGISTER_MODEL(BPR) { register_model({...}); }
// inside namespace recbole::models.
#define RECBOLE_REGISTER_MODEL(id) void register_model_##id()

}  // namespace recbole::models

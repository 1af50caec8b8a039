#pragma once
// The model interface and the model registry.
//
// A model is built by name from the registry with a ModelContext; it creates every parameter and
// every output on the device manager's device. Two kinds:
//  - kGradient: trained by the trainer's loop through calculate_loss();
//  - kFitOnce: fitted once by fit() on the training matrix (no epochs, no optimizer).
// Tensors: user and item ids are int64; scores are float32. n_users / n_items include id 0 (pad).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/interaction_matrix.h"
#include "recbole/utils/device_manager.h"

namespace recbole::config {
class Config;
}

namespace recbole::models {

enum class ModelKind { kGradient, kFitOnce };

// What a model is built from. References must outlive the model.
struct ModelContext {
  const config::Config& config;
  int64_t n_users;                        // including the pad id 0
  int64_t n_items;                        // including the pad id 0
  const data::InteractionMatrix& train;   // user → items of the training split (CPU)
  const DeviceManager& device;
};

// One training batch, on the device manager's device.
struct TrainBatch {
  torch::Tensor users;      // [B] int64
  torch::Tensor pos_items;  // [B] int64
  torch::Tensor neg_items;  // [B] int64 (undefined without negative sampling)
};

class Model : public torch::nn::Module {
 public:
  Model(std::string name, const ModelContext& ctx);
  ~Model() override = default;

  const std::string& name() const { return name_; }
  int64_t n_users() const { return n_users_; }
  int64_t n_items() const { return n_items_; }
  const DeviceManager& device_manager() const { return device_; }

  virtual ModelKind kind() const = 0;

  // kFitOnce: fits on ctx.train. kGradient: nothing.
  virtual void fit() {}

  // kGradient: scalar loss on the device for one batch.
  virtual torch::Tensor calculate_loss(const TrainBatch& batch);

  // Scores of every item for a block of users.
  // users: [B] int64 on the device → [B, n_items] float32 on the device.
  virtual torch::Tensor full_sort_predict(const torch::Tensor& users) = 0;

  // Scores of (user, item) pairs. users, items: [N] int64 on the device → [N] float32.
  // Default: gathers from full_sort_predict.
  virtual torch::Tensor predict(const torch::Tensor& users, const torch::Tensor& items);

  // Optional: when every score is ⟨user factor, item factor⟩, the two factor matrices
  // (users: [n_users, d], items: [n_items, d], float32 on the device), so that the CPU evaluator
  // can fuse the product with masking and top-K tile by tile. Default: none (false).
  virtual bool score_factors(torch::Tensor* users, torch::Tensor* items) const {
    (void)users;
    (void)items;
    return false;
  }

  // Number of trainable scalars (RecBole's "Trainable parameters").
  int64_t trainable_parameter_count() const;

  // A one-line description for the log.
  virtual std::string describe() const;

 protected:
  const config::Config& config_;
  const data::InteractionMatrix& train_;

 private:
  std::string name_;
  int64_t n_users_, n_items_;
  const DeviceManager& device_;
};

using ModelFactory = std::function<std::shared_ptr<Model>(const ModelContext&)>;

// Registers `name` (the config name, e.g. "BPR"). Called from register_builtin_models().
void register_model(const std::string& name, const std::string& description, ModelFactory factory);

// Builds a model by config name; an unknown name is a ConfigError listing the known ones.
std::shared_ptr<Model> create_model(const std::string& name, const ModelContext& ctx);

// Throws the same ConfigError as create_model when `name` is not registered.
void check_model_name(const std::string& name);

// (name, description) of every registered model, sorted by name.
std::vector<std::pair<std::string, std::string>> registered_models();

// Registers every model shipped with recbole-cpp (idempotent). An explicit list rather than
// static self-registration, because static libraries drop unreferenced registration objects.
void register_builtin_models();

}  // namespace recbole::models

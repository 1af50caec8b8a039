#include "models/model.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "recbole/config/config.h"
#include "recbole/config/model_keys.h"
#include "recbole/config/unported_models.h"
#include "recbole/utils/error.h"
#include "recbole/utils/torch_compat.h"

namespace recbole::models {

const char* input_type_name(InputType type) {
  switch (type) {
    case InputType::kPairwise:
      return "pairwise";
    case InputType::kPointwise:
      return "pointwise";
    case InputType::kUserRows:
      return "user rows";
    case InputType::kNextItem:
      return "next item";
    case InputType::kFitOnce:
      return "fit once";
  }
  return "?";
}

Model::Model(std::string name, const ModelContext& ctx)
    : config_(ctx.config),
      train_(ctx.train),
      name_(std::move(name)),
      n_users_(ctx.n_users),
      n_items_(ctx.n_items),
      device_(ctx.device) {}

std::string ModelContext::config_model_name() const { return config.model(); }

const ModelDescriptor& Model::descriptor() const { return find_model(name_); }

InputType Model::input_type() const { return descriptor().input; }

torch::Tensor Model::calculate_loss(const data::Batch&) {
  throw Error(name_ + " is fitted once and has no training loss");
}

torch::Tensor Model::predict(const data::Batch& batch) {
  torch::Tensor scores = full_sort_predict(batch);
  return scores.gather(1, batch.items.view({-1, 1})).view({-1});
}

torch::Tensor Model::train_step(const data::Batch& batch, TrainStep& step) {
  step.optimizer().zero_grad();
  torch::Tensor loss = calculate_loss(batch);
  device_.check(loss, name_, "loss");
  loss.backward();
  // A parameter this loss does not reach (KGAT's KG pass leaves the user table alone) keeps a
  // zero gradient once the optimizer has stepped it, as PyTorch's zero_grad leaves it, so its
  // moments still move it — also in a resumed run, whose parameters come back without gradients.
  for (auto& group : step.optimizer().param_groups())
    for (auto& p : group.params())
      if (!p.grad().defined() && compat::has_optimizer_state(step.optimizer(), p))
        p.mutable_grad() = torch::zeros_like(p);
  step.finish_gradients();
  step.optimizer().step();
  return loss.detach();
}

torch::Tensor Model::register_table(const std::string& name, int64_t rows, int64_t cols,
                                    layers::Init init) {
  return register_parameter(name, device_.place(layers::new_table(rows, cols, init)));
}

int64_t Model::trainable_parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

std::string Model::describe() const {
  std::ostringstream out;
  out << name_ << "(";
  bool first = true;
  for (const auto& item : named_parameters()) {
    out << (first ? "" : ", ") << item.key() << ": " << item.value().sizes();
    first = false;
  }
  for (const auto& item : named_buffers()) {
    out << (first ? "" : ", ") << item.key() << " (buffer): " << item.value().sizes();
    first = false;
  }
  out << ")";
  return out.str();
}

namespace {

// Descriptors by name. Entries are never erased, so references to them stay valid.
std::map<std::string, ModelDescriptor>& registry() {
  static std::map<std::string, ModelDescriptor> r;
  return r;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_model(ModelDescriptor descriptor) {
  if (descriptor.name.empty() || !descriptor.factory)
    throw Error("register_model: a model needs a name and a factory");
  config::register_model_keys(descriptor.name, descriptor.keys);
  config::register_model_task(descriptor.name, descriptor.task);
  std::lock_guard<std::mutex> lock(registry_mutex());
  const std::string name = descriptor.name;
  registry()[name] = std::move(descriptor);
}

namespace {

// The config asks for a model's keys before anything else needs the models: let it register
// the shipped ones then. (A static initialiser of this file, which every program that can build
// a model links.)
const bool kModelKeyLoaderSet = (config::set_model_key_loader(&register_builtin_models), true);

}  // namespace

const ModelDescriptor& find_model(const std::string& name) {
  register_builtin_models();
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, e] : registry()) known += (known.empty() ? "" : ", ") + n;
    if (config::is_unported_model(name))
      throw ConfigError("model: " + name +
                        " is a RecBole model not supported yet (not implemented in this "
                        "version); models implemented: " +
                        known);
    throw ConfigError("model: unknown model \"" + name + "\"; known models: " + known);
  }
  return it->second;
}

std::shared_ptr<Model> create_model(const std::string& name, const ModelContext& ctx) {
  const ModelFactory factory = find_model(name).factory;
  // The parameters are allocated here; an allocation that cannot succeed (embedding_size 2·10⁹)
  // is the user's setting, not an internal failure: say so without libtorch's backtrace.
  auto too_big = [&](const std::string& detail) {
    return ConfigError(name + ": not enough memory for the model's parameters (" +
                       std::to_string(ctx.n_users) + " users, " + std::to_string(ctx.n_items) +
                       " items): " + detail +
                       "; expected a smaller embedding_size (or other size keys of the model)");
  };
  try {
    return factory(ctx);
  } catch (const std::bad_alloc&) {
    throw too_big("out of memory");
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    if (msg.find("alloc") == std::string::npos) throw;
    throw too_big(msg.substr(0, msg.find('\n')));
  }
}

std::vector<ModelDescriptor> registered_models() {
  register_builtin_models();
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<ModelDescriptor> out;
  for (const auto& [n, e] : registry()) out.push_back(e);
  return out;
}

}  // namespace recbole::models

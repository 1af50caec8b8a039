#include "models/model.h"

#include <map>
#include <mutex>
#include <sstream>

#include "recbole/utils/error.h"

namespace recbole::models {

Model::Model(std::string name, const ModelContext& ctx)
    : config_(ctx.config),
      train_(ctx.train),
      name_(std::move(name)),
      n_users_(ctx.n_users),
      n_items_(ctx.n_items),
      device_(ctx.device) {}

torch::Tensor Model::calculate_loss(const TrainBatch&) {
  throw Error(name_ + " is fitted once and has no training loss");
}

torch::Tensor Model::predict(const torch::Tensor& users, const torch::Tensor& items) {
  torch::Tensor scores = full_sort_predict(users);
  return scores.gather(1, items.view({-1, 1})).view({-1});
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

struct Entry {
  std::string description;
  ModelFactory factory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_model(const std::string& name, const std::string& description, ModelFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name] = Entry{description, std::move(factory)};
}

namespace {

// The factory registered under `name`; an unknown name is a ConfigError listing the known ones.
ModelFactory find_factory(const std::string& name) {
  register_builtin_models();
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, e] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("model: unknown model \"" + name + "\"; known models: " + known);
  }
  return it->second.factory;
}

}  // namespace

void check_model_name(const std::string& name) { find_factory(name); }

std::shared_ptr<Model> create_model(const std::string& name, const ModelContext& ctx) {
  const auto factory = find_factory(name);
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

std::vector<std::pair<std::string, std::string>> registered_models() {
  register_builtin_models();
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [n, e] : registry()) out.emplace_back(n, e.description);
  return out;
}

}  // namespace recbole::models

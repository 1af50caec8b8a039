#include "recbole/config/model_keys.h"

#include <map>
#include <mutex>

#include "recbole/utils/text.h"

namespace recbole::config {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::vector<KeyDecl>> keys;  // by model name
  std::map<std::string, std::string> tasks;          // by model name
  void (*loader)() = nullptr;
  bool loaded = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Runs the loader once, outside the lock (it registers models, which lands back here).
Registry& loaded_registry() {
  Registry& r = registry();
  void (*loader)() = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.loaded && r.loader) {
      r.loaded = true;
      loader = r.loader;
    }
  }
  if (loader) loader();
  return r;
}

// The entry of `model` (exact, else case-insensitive); nullptr when absent. Needs the lock.
const std::vector<KeyDecl>* find_locked(Registry& r, const std::string& model) {
  auto it = r.keys.find(model);
  if (it != r.keys.end()) return &it->second;
  for (const auto& [name, keys] : r.keys)
    if (to_lower(name) == to_lower(model)) return &keys;
  return nullptr;
}

}  // namespace

void register_model_keys(const std::string& model, std::vector<KeyDecl> keys) {
  for (KeyDecl& k : keys) k.category = std::string(kCategoryModelPrefix) + model;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.keys[model] = std::move(keys);
}

void register_model_task(const std::string& model, const std::string& task) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tasks[model] = task;
}

std::string model_task(const std::string& model) {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.tasks.find(model);
  if (it != r.tasks.end()) return it->second;
  for (const auto& [name, task] : r.tasks)
    if (to_lower(name) == to_lower(model)) return task;
  return "";
}

bool model_declares_keys(const std::string& model) {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return find_locked(r, model) != nullptr;
}

const KeyDecl* find_model_key(const std::string& model, const std::string& key) {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::vector<KeyDecl>* keys = find_locked(r, model);
  if (!keys) return nullptr;
  for (const KeyDecl& k : *keys)
    if (k.name == key) return &k;  // entries are never erased once a model is loaded
  return nullptr;
}

std::vector<KeyDecl> model_keys(const std::string& model) {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::vector<KeyDecl>* keys = find_locked(r, model);
  return keys ? *keys : std::vector<KeyDecl>{};
}

bool is_any_model_key(const std::string& key) {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [name, keys] : r.keys)
    for (const KeyDecl& k : keys)
      if (k.name == key) return true;
  return false;
}

std::vector<std::pair<std::string, std::vector<KeyDecl>>> all_model_keys() {
  Registry& r = loaded_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return {r.keys.begin(), r.keys.end()};
}

void set_model_key_loader(void (*loader)()) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.loader = loader;
}

}  // namespace recbole::config

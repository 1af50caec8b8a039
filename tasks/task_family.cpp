#include "tasks/task_family.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/preload_weight.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"

namespace recbole::tasks {
namespace {

std::mutex& families_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, TaskFamily>& families() {
  static std::map<std::string, TaskFamily> table;
  return table;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

void register_family(TaskFamily family) {
  std::lock_guard<std::mutex> lock(families_mutex());
  const std::string name = family.name;
  families()[name] = std::move(family);
}

const TaskFamily& find_family(const std::string& name) {
  register_builtin_families();
  std::lock_guard<std::mutex> lock(families_mutex());
  const auto it = families().find(name);
  if (it != families().end()) return it->second;
  std::string known;
  for (const auto& [n, f] : families()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("task family \"" + name + "\" is not registered; known: " + known);
}

std::vector<TaskFamily> registered_families() {
  register_builtin_families();
  std::vector<TaskFamily> out;
  {
    std::lock_guard<std::mutex> lock(families_mutex());
    for (const auto& [name, f] : families()) out.push_back(f);
  }
  std::stable_sort(out.begin(), out.end(), [](const TaskFamily& a, const TaskFamily& b) {
    return a.help_order < b.help_order;
  });
  return out;
}

std::string models_help_text() {
  const std::vector<models::ModelDescriptor> all = models::registered_models();
  std::vector<std::string> order;
  for (const TaskFamily& f : registered_families()) order.push_back(f.name);
  // A model of a family nobody registered (a program's own) still shows, after the others.
  for (const models::ModelDescriptor& d : all)
    if (std::find(order.begin(), order.end(), d.task) == order.end()) order.push_back(d.task);
  std::ostringstream out;
  bool first = true;
  for (const std::string& family : order) {
    bool header = false;
    for (const models::ModelDescriptor& d : all) {
      if (d.task != family) continue;
      if (!header) {
        out << (first ? "" : "\n") << "  " << family << ":\n";
        header = true;
        first = false;
      }
      out << "    " << pad(d.name, 14) << pad(models::input_type_name(d.input), 11) << d.description
          << "\n";
    }
  }
  return out.str();
}

std::shared_ptr<const data::SplitDataset> interaction_split(const config::Config& config,
                                                            const data::Dataset& dataset) {
  (void)config;
  return std::make_shared<const data::SplitDataset>(
      data::split_dataset(dataset, dataset.options()));
}

std::unique_ptr<TaskPipeline> make_task_pipeline(const TaskFamily& family,
                                                 const config::Config& config,
                                                 const data::Dataset& dataset,
                                                 std::shared_ptr<const data::SplitDataset> split) {
  if (!family.pipeline)
    throw ConfigError("model: " + config.model() + " is a " + family.name + " model, and the " +
                      family.name + " task has no pipeline in this version");
  std::unique_ptr<TaskPipeline> p = family.pipeline(config, dataset, split.get());
  if (split) p->hold(std::move(split));
  p->set_preload_weights(&dataset.preload_weights().by_field);
  return p;
}

}  // namespace recbole::tasks

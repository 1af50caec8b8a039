#include "recbole/config/config_entries.h"

#include <utility>

#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/config/model_keys.h"

namespace recbole::config {

std::vector<ConfigEntry> config_entries(const Config& config) {
  // Categories in a fixed order; every "Model: ..." category prints under one heading.
  const std::vector<std::pair<std::string, std::string>> sections = {
      {kCategoryGeneral, "General Hyper Parameters"},
      {kCategoryTraining, "Training Hyper Parameters"},
      {kCategoryEvaluation, "Evaluation Hyper Parameters"},
      {kCategoryDataset, "Dataset Hyper Parameters"},
      {kCategoryDistributed, "Distributed Hyper Parameters"},
      {kCategoryModelPrefix, "Model Hyper Parameters"}};
  std::vector<ConfigEntry> out;
  for (const auto& [cat, title] : sections) {
    const std::vector<KeyDecl> section_keys =
        cat == kCategoryModelPrefix ? model_keys(config.model()) : declared_keys();
    for (const auto& decl : section_keys) {
      const bool in_section = cat == kCategoryModelPrefix || decl.category == cat;
      if (!in_section || !config.has(decl.name)) continue;
      out.push_back(
          {title, decl.name, node_text(config.node(decl.name)), config.source(decl.name)});
    }
  }
  return out;
}

}  // namespace recbole::config

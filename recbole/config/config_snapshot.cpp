#include "recbole/config/config_snapshot.h"

#include <yaml-cpp/yaml.h>

#include "recbole/config/config.h"

namespace recbole::config {

std::string config_snapshot(const config::Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const std::string& key : config.keys())
    out << YAML::Key << key << YAML::Value << config.node(key);
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace recbole::config

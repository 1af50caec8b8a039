#pragma once
// Declarations of model keys that the Key builder's bounds cannot express alone: a probability
// in [0, 1) (dropout rates; 1 would zero every activation) and a non-empty list of sizes; and
// the read of a weight list whose length the model fixes.
#include <cstddef>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "recbole/config/config.h"
#include "recbole/config/key_decl.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

// A float key in [0, 1).
inline config::Key probability_key(const char* name) {
  return config::Key(name, config::KeyType::kFloat).min(0).check([](const YAML::Node& v) {
    if (v.as<double>() >= 1.0) throw config::InvalidValue("", "float in [0, 1)", v);
    return v;
  });
}

// A non-empty list of layer sizes, each >= 1.
inline config::Key sizes_key(const char* name) {
  return config::Key(name, config::KeyType::kIntList).min(1).check([](const YAML::Node& v) {
    if (v.size() == 0) throw config::InvalidValue("", "a non-empty list of int >= 1", v);
    return v;
  });
}

// The float list `key` of `model`, which must hold exactly `meanings.size()` values (the
// declaration checks their bounds); a ConfigError naming the key, the model and what each value
// weighs otherwise. E.g. weight_list(config, "FISM", "reg_weights", {"p", "q"}).
inline std::vector<double> weight_list(const config::Config& config, const std::string& model,
                                       const std::string& key,
                                       const std::vector<std::string>& meanings) {
  std::vector<double> values = config.get_double_list(key);
  if (values.size() != meanings.size()) {
    std::string names;
    for (const std::string& m : meanings) names += (names.empty() ? "" : ", ") + m;
    throw ConfigError(config.source(key) + ": " + model + ": " + key + ": expected " +
                      std::to_string(meanings.size()) + " weights (" + names + "), got " +
                      std::to_string(values.size()));
  }
  return values;
}

}  // namespace recbole::models::layers

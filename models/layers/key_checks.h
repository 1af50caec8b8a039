#pragma once
// Declarations of model keys that the Key builder's bounds cannot express alone: a probability
// in [0, 1) (dropout rates; 1 would zero every activation) and a non-empty list of sizes.
#include <yaml-cpp/yaml.h>

#include "recbole/config/key_decl.h"

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

}  // namespace recbole::models::layers

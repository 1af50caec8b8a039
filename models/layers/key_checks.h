#pragma once
// Checks for model keys that the Key builder's inclusive bounds cannot express.
#include <yaml-cpp/yaml.h>

#include "recbole/config/key_decl.h"

namespace recbole::models::layers {

// A probability in [0, 1): declare with .min(0).check(below_one) (a dropout rate of 1 would
// divide by zero when rescaling the survivors).
inline YAML::Node below_one(const YAML::Node& value) {
  if (value.as<double>() >= 1.0) throw config::InvalidValue("", "float in [0, 1)", value);
  return value;
}

}  // namespace recbole::models::layers

#pragma once
// The effective configuration as a list, for a program to read: the keys, values and sources
// that Config::dump() prints at the start of the log, in the same sections and order (the run
// report's table is made from it).
#include <string>
#include <vector>

namespace recbole::config {

class Config;

struct ConfigEntry {
  std::string section;  // "General Hyper Parameters", ..., "Model Hyper Parameters"
  std::string key;
  std::string value;   // YAML text, on one line
  std::string source;  // as Config::source()
};

// Every key `config` holds, by section: general, training, evaluation, dataset, distributed,
// then the model's own keys; within a section in declaration order.
std::vector<ConfigEntry> config_entries(const Config& config);

}  // namespace recbole::config

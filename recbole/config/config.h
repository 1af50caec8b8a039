#pragma once
// Config: one flat, typed, validated map of configuration keys, each value with its source.
//
// Precedence, lowest to highest (later wins, top-level keys only):
//   configs/overall.yaml < configs/model/<Model>.yaml < configs/dataset/default.yaml
//   < configs/dataset/<dataset>.yaml < user files (in order) < API overrides < command line.
// Then `eval_args` and `train_neg_sample_args`, when given partially, are completed key by key
// from their defaults, and derived keys are set (valid_metric_bigger, topk as a list, ...).
//
// After build, consumers can rely on these normal forms:
//   eval_args: {split: {RS: [a, b, c]} | {LS: valid_and_test|valid_only|test_only},
//               order: RO|TO, group_by: user|none, mode: {valid: m, test: m}} with m one of
//               full, labeled, uniN, popN (lower case);
//   train_neg_sample_args: all five keys; no sampling is {distribution: none, sample_num: 0,
//               alpha: 1.0, dynamic: false, candidate_num: 0};
//   metrics: canonical names of the metric registry (recbole/config/metric_registry.h),
//            ranking or value metrics, value metrics only with mode labeled;
//   valid_metric: "<Metric>@<k>", "GAUC" or a value metric's name;
//   topk and other list keys: always lists; bools: true/false; choices: declared spelling.
// An empty model/dataset is allowed (no model/dataset file is loaded); names are not checked here.
//
// Every general key is declared once in config_keys.cpp, every model key by its model
// (model_keys.h), with type, bounds or choices and help; defaults live in the YAML files under
// configs/. A key of another model than the chosen one is a ConfigError naming the model's keys. An
// unknown key, a wrong type or a bad value is a ConfigError naming the key, where the value came
// from ("a.yaml:3", "command line --epochs") and what was expected; unknown keys get the nearest
// declared key suggested.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace recbole::config {

// Everything a Config is built from. `model` and `dataset` may also come from the files or the
// command line (keys `model`, `dataset`); the explicit fields win when non-empty.
struct ConfigSources {
  std::string model;
  std::string dataset;
  std::vector<std::string> config_files;  // user YAML files, applied in order
  // key -> value text parsed as YAML ("[5,10]", "1e-3", "{split: {RS: [8,1,1]}}"), from the C++
  // API.
  std::vector<std::pair<std::string, std::string>> api_overrides;
  // key -> value text from `--key=value` arguments, already split (see parse_command_line).
  std::vector<std::pair<std::string, std::string>> command_line;
  // Where `model` / `dataset` above came from, as Config::source reports it; empty means
  // "API argument" (parse_command_line sets "command line --model").
  std::string model_source;
  std::string dataset_source;
  // Used when neither the fields above nor any config file or override names one (a tool's
  // default, e.g. recbole_run's BPR on ml-100k); a config file's `model:` wins over these.
  std::string default_model;
  std::string default_dataset;
};

// Splits argv into `--key=value` pairs. `--config_files=a.yaml,b.yaml`, `--model=X` and
// `--dataset=Y` are moved into the matching ConfigSources fields. A token not of the form
// `--key=value`, or a key given twice with different values, is a ConfigError.
// Tokens `--NAME=value` whose NAME is in `tool_keys` are not config keys: they go to
// `tool_values` (a tool's own options such as recbole_data's --dump_split).
ConfigSources parse_command_line(int argc, const char* const* argv,
                                 const std::vector<std::string>& tool_keys = {},
                                 std::map<std::string, std::string>* tool_values = nullptr);

class Config {
 public:
  // Loads, merges, completes and validates. Throws ConfigError.
  static Config build(const ConfigSources& sources);

  const std::string& model() const { return model_; }
  const std::string& dataset() const { return dataset_; }

  bool has(const std::string& key) const;      // present (possibly null)
  bool is_null(const std::string& key) const;  // absent, or `~` / null

  // Typed access; a missing key or a value of another type is a ConfigError naming the key.
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;  // ints are accepted as doubles
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_double_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;
  YAML::Node node(const std::string& key) const;  // a clone; Null node when absent

  // Where the effective value came from: "configs/overall.yaml:12", "exp.yaml:3",
  // "API override", "command line --epochs", or "derived".
  std::string source(const std::string& key) const;

  // Sets a value after build (used by tools and tests); validated like any other source.
  void set(const std::string& key, const std::string& yaml_value,
           const std::string& source = "API override");

  // The effective configuration, one `key = value    (source)` line per key, grouped by category.
  std::string dump() const;

  // All keys, sorted.
  std::vector<std::string> keys() const;

 private:
  struct Entry {
    YAML::Node value;
    std::string source;
    // A model key read before the model is known (layers are read first): checked against the
    // model's own declaration once the layers are merged. origin_file locates nested errors.
    bool unchecked_model_key = false;
    std::string origin_file{};
  };
  std::string model_;
  std::string dataset_;
  std::map<std::string, Entry> values_;
  friend class ConfigBuilder;
};

}  // namespace recbole::config

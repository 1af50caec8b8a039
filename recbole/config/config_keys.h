#pragma once
// The declaration of every configuration key: its type, whether it may be null, its bounds or
// allowed choices, its category and one line of help. Each key is declared once, in
// config_keys.cpp; its default lives in a YAML file under configs/ (never here). From these
// declarations the Config checks values, `--help` lists the keys and docs/config-keys.md is
// generated (tools/gen_config_docs).
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace recbole::config {

// Categories, in the order the dump and the docs show them. Model keys use "Model: A, B", naming
// the models whose YAML file sets them.
inline constexpr const char* kCategoryGeneral = "General";
inline constexpr const char* kCategoryTraining = "Training";
inline constexpr const char* kCategoryEvaluation = "Evaluation";
inline constexpr const char* kCategoryDataset = "Dataset";
inline constexpr const char* kCategoryDistributed = "Distributed";
inline constexpr const char* kCategoryModelPrefix = "Model: ";

enum class KeyType { kBool, kInt, kFloat, kString, kIntList, kFloatList, kStringList, kMap };

// A value that does not fit its key's declaration. `path` names the part below the key that is
// wrong ("" for the value itself, "split.RS" inside eval_args); `node` is that offending
// (sub)value, for its line and its text.
class InvalidValue : public std::runtime_error {
 public:
  InvalidValue(std::string path, std::string expected, YAML::Node node);
  std::string path;
  std::string expected;
  YAML::Node node;
};

struct KeyDecl {
  std::string name;
  KeyType type = KeyType::kString;
  bool nullable = false;
  // Bounds of an int or float (each element of a list); min may be exclusive ("> 0").
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  // Allowed strings (each element of a string list), matched case-insensitively and stored in
  // the spelling given here.
  std::vector<std::string> choices;
  std::string category;
  std::string help;
  // The expected form when the type alone does not say it (maps, patterns), e.g.
  // "{split, order, group_by, mode}"; used in error messages and the docs.
  std::string shape;
  // Further checks after the type check (structures, patterns); returns the normalised value and
  // throws InvalidValue. Never called with a null value.
  std::function<YAML::Node(const YAML::Node&)> check;
  // Computed by Config::build (e.g. valid_metric_bigger): no default in the YAML files, and a
  // value set by the user is replaced.
  bool derived = false;

  std::string type_name() const;    // "int", "list of string", "map", ...
  std::string bounds_text() const;  // ">= 0", "in [1, 65535]", "one of a, b", "" when none
  std::string expected() const;     // "int >= 0", "one of RO, TO or null", ... for messages
  bool is_model_key() const;        // category starts with "Model: "
};

// Every declared key, in declaration order (grouped by category).
const std::vector<KeyDecl>& declared_keys();

// The declaration of `name`, or nullptr when it is not declared.
const KeyDecl* find_key(const std::string& name);

// The declared key nearest to `name` by edit distance (case-insensitive), or "" when none is
// close enough to be a plausible typo.
std::string nearest_key(const std::string& name);

// Checks `value` against `key` and returns it normalised: bools as true/false, choices in their
// declared spelling, a scalar given for a list wrapped into a one-element list, a plain `None`
// as null, structures completed where their check does so. Throws InvalidValue.
YAML::Node validate_value(const KeyDecl& key, const YAML::Node& value);

// Metric names accepted by `metrics` and `valid_metric` (canonical spelling). To be replaced by
// the evaluator's registry.
const std::vector<std::string>& known_metric_names();
// Canonical spelling of a metric name given in any case, or "" when unknown.
std::string canonical_metric_name(const std::string& name);
// True for metrics ranked by top-k lists (written `<metric>@<k>`); false for GAUC.
bool metric_uses_topk(const std::string& name);
// RecBole's rule for valid_metric_bigger: false iff the metric (any case) is one where smaller
// is better (MAE, RMSE, LogLoss, AveragePopularity, GiniIndex).
bool metric_bigger_is_better(const std::string& name);

// A Markdown reference of every key: per category, a table of name, type, default and the file
// that sets it, bounds or choices, help. Written to docs/config-keys.md by tools/gen_config_docs.
std::string keys_reference_markdown();

// Plain-text list of every key for `--help`.
std::string keys_help_text();

// ---- YAML scalar helpers (YAML 1.1 as RecBole reads it, plus `1e-5` as a float) ----

// Null: `~`, `null`, an empty value, or a plain (unquoted) `None` as Python writes it.
bool is_null_node(const YAML::Node& node);
// `true`/`false` in any case.
std::optional<bool> parse_bool(const std::string& text);
// Decimal integers with an optional sign.
std::optional<int64_t> parse_int(const std::string& text);
// Decimal numbers with optional fraction and exponent (`1e-5`, `0.1`, `3`), `.inf`, `-.inf`,
// `.nan`.
std::optional<double> parse_float(const std::string& text);
// A value as one line of flow YAML ("[5, 10]", "{RS: [0.8, 0.1, 0.1]}", "~"), for messages and
// dumps.
std::string node_text(const YAML::Node& node);

}  // namespace recbole::config

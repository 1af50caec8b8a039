#pragma once
// What a configuration key is: its type, whether it may be null, its bounds or allowed choices,
// its category and one line of help (KeyDecl, built with Key), the texts these give for messages
// and the docs, and the check of a value against them (validate_value). The declarations
// themselves are in config_keys.cpp.
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
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

// Checks `value` against `key` and returns it normalised: bools as true/false, choices in their
// declared spelling, a scalar given for a list wrapped into a one-element list, a plain `None`
// as null, structures completed where their check does so. Throws InvalidValue.
YAML::Node validate_value(const KeyDecl& key, const YAML::Node& value);

// Fluent builder of a KeyDecl, so that each declaration reads as one line:
//   Key("epochs", KeyType::kInt, kCategoryTraining).min(0).help("Maximum number of epochs")
struct Key {
  KeyDecl d;
  // A model key needs no category: register_model_keys sets "Model: <model>".
  Key(const char* name, KeyType type, const char* category = "") {
    d.name = name;
    d.type = type;
    d.category = category;
  }
  Key& null() {
    d.nullable = true;
    return *this;
  }
  Key& min(double v) {
    d.min = v;
    return *this;
  }
  Key& above(double v) {
    d.min = v;
    d.min_exclusive = true;
    return *this;
  }
  Key& max(double v) {
    d.max = v;
    return *this;
  }
  Key& choices(std::vector<std::string> c) {
    d.choices = std::move(c);
    return *this;
  }
  Key& shape(std::string s) {
    d.shape = std::move(s);
    return *this;
  }
  Key& check(std::function<YAML::Node(const YAML::Node&)> f) {
    d.check = std::move(f);
    return *this;
  }
  Key& derived() {
    d.derived = true;
    return *this;
  }
  Key& help(const char* h) {
    d.help = h;
    return *this;
  }
  // Implicit, so that a braced list of Keys initialises a list of KeyDecls.
  operator KeyDecl() const { return d; }  // NOLINT(google-explicit-constructor)
};

}  // namespace recbole::config

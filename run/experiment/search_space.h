#pragma once
// The search space of a hyper-parameter search, read from RecBole's params file (the format of
// RecBole's `hyper.test`, hyperopt's distributions): one parameter per line,
//
//   learning_rate loguniform -8,0        exp(uniform(-8, 0))
//   embedding_size choice [32,64,128]    one of the values (numbers, strings, lists; YAML flow)
//   dropout_prob uniform 0,0.5           uniform(0, 0.5)
//   n_layers quniform 1,4,1              round(uniform(1, 4) / 1) * 1
//
// Blank lines and `#` comments are allowed. Each name must be a config key that recbole_run
// accepts for the model (KeyCheck); the values themselves are checked by recbole_run when a
// trial starts, as RecBole does. Errors are ConfigErrors naming `file:line`.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace recbole::experiment {

enum class Distribution { kChoice, kUniform, kLogUniform, kQUniform };

// "choice", "uniform", "loguniform", "quniform".
const char* distribution_name(Distribution d);

struct Parameter {
  std::string name;
  Distribution kind = Distribution::kChoice;
  // uniform, loguniform: {low, high} (loguniform's bounds are logarithms); quniform: {low, high,
  // q}. Empty for choice.
  std::vector<double> args;
  // choice: the values in file order (numbers, strings, booleans or lists).
  std::vector<nlohmann::json> values;
  // "file:line", for messages.
  std::string where;
};

// One configuration of the parameters, in the order of the search space.
using Assignment = std::vector<std::pair<std::string, nlohmann::json>>;

struct SearchSpace {
  std::vector<Parameter> params;

  // trials.json's "params": [{"name","kind","args":[...]} or {"name","kind":"choice",
  // "values":[...]}], in file order.
  nlohmann::json to_json() const;
};

// Whether a parameter name is a key recbole_run accepts: "" when it is, else the reason, e.g.
// `unknown config key "learnin_rate"; did you mean "learning_rate"?`.
using KeyCheck = std::function<std::string(const std::string& name)>;

// The config layer's answer for `model` (recbole/config): a declared general key, or one of the
// model's own keys (any model's, when `model` declared none). The keys that name the run itself
// (model, dataset, result_file) cannot be searched.
KeyCheck config_key_check(const std::string& model);

// Parses the text of a params file; `file` names it in messages.
SearchSpace parse_search_space(const std::string& text, const std::string& file,
                               const KeyCheck& check);

// Reads and parses the params file at `path`.
SearchSpace read_search_space(const std::string& path, const KeyCheck& check);

// For exhaustive search: every parameter must be a choice (ConfigError naming the first other
// one's line otherwise).
void require_all_choices(const SearchSpace& space);

// A value as recbole_run reads it on its command line (`--key=<text>`, parsed as YAML): numbers
// in their shortest exact form, strings as written, lists as flow YAML.
std::string value_text(const nlohmann::json& value);

// An Assignment as a JSON object {name: value}.
nlohmann::json assignment_json(const Assignment& a);

}  // namespace recbole::experiment

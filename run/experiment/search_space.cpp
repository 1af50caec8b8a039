#include "run/experiment/search_space.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "recbole/config/config_keys.h"
#include "recbole/config/model_keys.h"
#include "recbole/config/yaml_scalar.h"
#include "recbole/utils/error.h"

namespace recbole::experiment {
namespace {

constexpr const char* kForm =
    "`<name> <distribution> <values>`, e.g. `learning_rate loguniform -8,0` or "
    "`embedding_size choice [32,64,128]`";

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// YAML's rule: `#` at the start or after a blank starts a comment.
std::string strip_comment(const std::string& line) {
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

bool parse_distribution(const std::string& word, Distribution* d) {
  for (Distribution c : {Distribution::kChoice, Distribution::kUniform, Distribution::kLogUniform,
                         Distribution::kQUniform})
    if (word == distribution_name(c)) {
      *d = c;
      return true;
    }
  return false;
}

// A number as JSON: an integer when it is one (so that `1,4,1` stays `[1,4,1]`).
nlohmann::json number_json(double x) {
  if (std::isfinite(x) && std::floor(x) == x && std::fabs(x) < 9e15)
    return nlohmann::json(static_cast<int64_t>(x));
  return nlohmann::json(x);
}

// A YAML value of a choice list as JSON: quoted scalars stay strings; plain ones become null,
// booleans, integers or floats when they read as such (the config's YAML 1.1 rules).
nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (node.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : node) a.push_back(yaml_to_json(item));
    return a;
  }
  if (node.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : node) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (config::is_null_node(node)) return nullptr;
  const std::string text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (auto b = config::parse_bool(text)) return *b;
  if (auto i = config::parse_int(text)) return *i;
  if (auto f = config::parse_float(text)) return *f;
  return text;
}

std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    auto v = config::parse_float(trim(part));
    if (!v || !std::isfinite(*v)) return {};
    out.push_back(*v);
  }
  if (!text.empty() && text.back() == ',') return {};
  return out;
}

Parameter parse_range(Parameter p, const std::string& text, const std::string& where) {
  const bool quantised = p.kind == Distribution::kQUniform;
  const size_t n = quantised ? 3 : 2;
  const std::string shape = quantised ? "low,high,q" : "low,high";
  p.args = parse_numbers(text);
  if (p.args.size() != n)
    throw ConfigError(where + ": " + p.name + " " + distribution_name(p.kind) + ": expected " +
                      std::to_string(n) + " numbers " + shape + ", got \"" + text + "\"");
  if (!(p.args[0] < p.args[1]))
    throw ConfigError(where + ": " + p.name + " " + distribution_name(p.kind) +
                      ": expected low < high, got \"" + text + "\"");
  if (quantised && !(p.args[2] > 0))
    throw ConfigError(where + ": " + p.name + " quniform: expected q > 0, got \"" + text + "\"");
  return p;
}

Parameter parse_choice(Parameter p, const std::string& text, const std::string& where) {
  const std::string expected =
      ": expected a non-empty list of values such as [32,64,128] or ['adam','sgd'], got \"" + text +
      "\"";
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": " + p.name + " choice" + expected + " (" + e.msg + ")");
  }
  if (!node.IsSequence() || node.size() == 0)
    throw ConfigError(where + ": " + p.name + " choice" + expected);
  for (const auto& item : node) p.values.push_back(yaml_to_json(item));
  return p;
}

}  // namespace

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kChoice:
      return "choice";
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kLogUniform:
      return "loguniform";
    case Distribution::kQUniform:
      return "quniform";
  }
  return "?";
}

nlohmann::json SearchSpace::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Parameter& p : params) {
    nlohmann::json j = {{"name", p.name}, {"kind", distribution_name(p.kind)}};
    if (p.kind == Distribution::kChoice) {
      j["values"] = p.values;
    } else {
      nlohmann::json args = nlohmann::json::array();
      for (double a : p.args) args.push_back(number_json(a));
      j["args"] = args;
    }
    out.push_back(j);
  }
  return out;
}

KeyCheck config_key_check(const std::string& model) {
  return [model](const std::string& name) -> std::string {
    if (name == "model" || name == "dataset" || name == "result_file")
      return "\"" + name + "\" cannot be searched: each trial sets it itself";
    if (const config::KeyDecl* decl = config::find_key(name)) {
      if (decl->derived) return "\"" + name + "\" is derived from other keys and cannot be set";
      return "";
    }
    const bool own_keys = !model.empty() && config::model_declares_keys(model);
    if (own_keys && config::find_model_key(model, name)) return "";
    if (!own_keys && config::is_any_model_key(name)) return "";
    if (own_keys && config::is_any_model_key(name)) {
      std::string names;
      for (const config::KeyDecl& k : config::model_keys(model))
        names += (names.empty() ? "" : ", ") + k.name;
      return model + " has no key \"" + name + "\"; " +
             (names.empty() ? "it has no keys of its own" : "its keys: " + names);
    }
    const std::string near = config::nearest_key(name);
    return "unknown config key \"" + name + "\"" +
           (near.empty() ? "" : "; did you mean \"" + near + "\"?");
  };
}

SearchSpace parse_search_space(const std::string& text, const std::string& file,
                               const KeyCheck& check) {
  SearchSpace space;
  std::map<std::string, std::string> seen;  // name -> where
  std::istringstream in(text);
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = trim(strip_comment(raw));
    if (line.empty()) continue;
    const std::string where = file + ":" + std::to_string(line_no);
    std::istringstream words(line);
    std::string name, kind;
    words >> name >> kind;
    std::string rest;
    std::getline(words, rest);
    rest = trim(rest);
    if (kind.empty() || rest.empty())
      throw ConfigError(where + ": expected " + kForm + ", got \"" + line + "\"");
    Parameter p;
    p.name = name;
    p.where = where;
    if (!parse_distribution(kind, &p.kind))
      throw ConfigError(where + ": " + name + ": unknown distribution \"" + kind +
                        "\"; expected one of choice, uniform, loguniform, quniform");
    if (auto [it, fresh] = seen.emplace(name, where); !fresh)
      throw ConfigError(where + ": " + name + ": given twice (first at " + it->second + ")");
    if (const std::string why = check ? check(name) : ""; !why.empty())
      throw ConfigError(where + ": " + why);
    space.params.push_back(p.kind == Distribution::kChoice ? parse_choice(p, rest, where)
                                                           : parse_range(p, rest, where));
  }
  if (space.params.empty())
    throw ConfigError(file + ": no parameter to search; expected lines of the form " + kForm);
  return space;
}

SearchSpace read_search_space(const std::string& path, const KeyCheck& check) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--params_file: cannot read \"" + path + "\"");
  std::stringstream s;
  s << in.rdbuf();
  return parse_search_space(s.str(), path, check);
}

void require_all_choices(const SearchSpace& space) {
  for (const Parameter& p : space.params)
    if (p.kind != Distribution::kChoice)
      throw ConfigError(p.where + ": " + p.name + " " + distribution_name(p.kind) +
                        ": exhaustive search needs every parameter as `choice [...]`; use "
                        "--algo=random or --algo=bayes for ranges");
}

std::string value_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "~";
  return value.dump();
}

nlohmann::json assignment_json(const Assignment& a) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [name, value] : a) o[name] = value;
  return o;
}

}  // namespace recbole::experiment

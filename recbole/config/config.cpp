#include "recbole/config/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "recbole/config/config_entries.h"
#include "recbole/config/config_keys.h"
#include "recbole/config/embedded_configs.h"
#include "recbole/config/metric_registry.h"
#include "recbole/config/model_keys.h"
#include "recbole/config/unported_models.h"
#include "recbole/config/yaml_documents.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::config {

namespace {

// " (a tab indents line N: ...)" when one does: yaml-cpp's message for it ("illegal map value")
// does not say so.
std::string tab_hint(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '\t')
      return " (a tab indents line " + std::to_string(n) + "; YAML indents with spaces only)";
  }
  return "";
}

// Counts the values of `node` as the checks will walk them, aliases expanded, and stops at
// `budget`: ten nested aliases in a 500-byte file expand to 10¹⁰ values.
bool within(const YAML::Node& node, int64_t& budget) {
  if (--budget < 0) return false;
  if (node.IsSequence()) {
    for (const auto& child : node)
      if (!within(child, budget)) return false;
  } else if (node.IsMap()) {
    for (const auto& kv : node)
      if (!within(kv.first, budget) || !within(kv.second, budget)) return false;
  }
  return true;
}

void check_expanded_size(const YAML::Node& node, const std::string& where) {
  constexpr int64_t kMaxValues = 100000;
  int64_t budget = kMaxValues;
  if (!within(node, budget))
    throw ConfigError(where + ": more than " + std::to_string(kMaxValues) +
                      " values once YAML aliases (*name) are expanded; expected a config file");
}

constexpr const char* kOverallYaml = "configs/overall.yaml";
constexpr const char* kDatasetDefaultYaml = "configs/dataset/default.yaml";
constexpr const char* kDerived = "derived";

// Where a layer's values come from: a YAML file (then each value's line is known) or a fixed
// label such as "API override".
struct Origin {
  std::string file;
  std::string label;
};

std::string at_line(const std::string& file, int zero_based_line) {
  return file + ":" + std::to_string(zero_based_line + 1);
}

std::string unknown_key_message(const std::string& key) {
  // Keys RecBole renamed get a pointer to their successor rather than an edit-distance guess.
  if (key == "neg_sampling" || key == "training_neg_sample_num")
    return "unknown config key \"" + key + "\" (an old RecBole key); use \"train_neg_sample_args\"";
  const std::vector<std::string> owners = unported_models_with_key(key);
  if (!owners.empty()) {
    std::string names;
    for (const std::string& m : owners) names += (names.empty() ? "" : ", ") + m;
    return key + ": a RecBole key not supported yet (a key of RecBole's " + names +
           (owners.size() == 1 ? " model" : " models") + ", not implemented in this version)";
  }
  std::string msg = "unknown config key \"" + key + "\"";
  std::string near = nearest_key(key);
  if (!near.empty()) return msg + "; did you mean \"" + near + "\"?";
  return msg + "; see docs/config-keys.md or --help for the declared keys";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

// Reads the layers, merges them and completes the result; the only code that touches Config's
// private state besides the accessors.
class ConfigBuilder {
 public:
  using Entries = std::map<std::string, Config::Entry>;

  // Replaces (never assigns into) an entry: yaml-cpp nodes share storage on copy, so assigning
  // into an existing node would also change every copy of it.
  static void put(Entries& m, const std::string& key, Config::Entry e) {
    m.erase(key);
    m.emplace(key, std::move(e));
  }

  // Checks one value of `key` and returns it normalised with its source. `where` names the
  // value's origin; for a file, nested errors report the line of the offending part.
  static Config::Entry checked(const std::string& key, const YAML::Node& raw,
                               const std::string& where, const Origin& origin) {
    const KeyDecl* decl = find_key(key);
    if (decl) return checked_with(*decl, key, raw, where, origin);
    // Kept as read (not cloned: a clone loses the line marks that errors report); replaced by
    // its checked clone in check_model_keys.
    if (is_any_model_key(key)) return {raw, where, true, origin.file};
    throw ConfigError(where + ": " + unknown_key_message(key));
  }

  // The model keys of the merged layers, checked against the chosen model's declarations. No
  // model, or one that declared nothing (an unknown name, refused when the run starts): nothing
  // to check against.
  static void check_model_keys(Config& c) {
    if (c.model_.empty() || !model_declares_keys(c.model_)) return;
    for (auto& [key, e] : c.values_) {
      if (!e.unchecked_model_key) continue;
      const KeyDecl* decl = find_model_key(c.model_, key);
      if (!decl) throw ConfigError(e.source + ": " + no_such_model_key(c.model_, key));
      e = checked_with(*decl, key, e.value, e.source, Origin{e.origin_file, e.source}, c.model_);
    }
  }

  static std::string no_such_model_key(const std::string& model, const std::string& key) {
    std::string names;
    for (const KeyDecl& k : model_keys(model)) names += (names.empty() ? "" : ", ") + k.name;
    return model + " has no key \"" + key + "\"; " +
           (names.empty() ? "it has no keys of its own" : "its keys: " + names);
  }

  // `model`: the model that declared the key, named in the error.
  static Config::Entry checked_with(const KeyDecl& key_decl, const std::string& key,
                                    const YAML::Node& raw, const std::string& where,
                                    const Origin& origin, const std::string& model = "") {
    const KeyDecl* decl = &key_decl;
    try {
      return {YAML::Clone(validate_value(*decl, raw)), where};
    } catch (const InvalidValue& e) {
      std::string w = where;
      if (!origin.file.empty() && e.node.IsDefined() && !e.node.IsNull() && e.node.Mark().line >= 0)
        w = at_line(origin.file, e.node.Mark().line);
      std::string name = e.path.empty() ? key : key + "." + e.path;
      if (!model.empty()) name = model + " key " + name;
      std::string expected = e.expected;
      const std::string kOrNull = " or null";
      if (e.path.empty() && decl->nullable &&
          (expected.size() < kOrNull.size() ||
           expected.compare(expected.size() - kOrNull.size(), kOrNull.size(), kOrNull) != 0))
        expected += kOrNull;
      throw ConfigError(w + ": " + name + ": expected " + expected + ", got \"" +
                        node_text(e.node) + "\"");
    }
  }

  // One YAML document of `key: value` lines, each checked.
  static Entries read_yaml(const std::string& text, const std::string& file) {
    YAML::Node doc;
    try {
      // Not YAML::LoadAll, which never returns on some texts (yaml_documents.h).
      const std::vector<YAML::Mark> starts = yaml_document_starts(text, 1);
      if (starts.size() > 1)
        throw ConfigError(at_line(file, std::max(starts[1].line, 0)) +
                          ": a second YAML document (after ---); expected one document of "
                          "`key: value` lines per file (give several files instead)");
      if (!starts.empty()) doc = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      throw ConfigError(at_line(file, std::max(e.mark.line, 0)) + ": YAML syntax error: " + e.msg +
                        tab_hint(text));
    }
    check_expanded_size(doc, file);
    Entries out;
    if (doc.IsNull()) return out;  // empty or comments only
    if (!doc.IsMap())
      throw ConfigError(at_line(file, std::max(doc.Mark().line, 0)) +
                        ": expected `key: value` lines, got \"" + node_text(doc) + "\"");
    Origin origin{file, ""};
    std::map<std::string, int> first_line;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      int line = it->first.Mark().line;
      if (!it->first.IsScalar())
        throw ConfigError(at_line(file, line) + ": expected a key name, got \"" +
                          node_text(it->first) + "\"");
      const std::string key = it->first.Scalar();
      auto [prev, fresh] = first_line.emplace(key, line);
      if (!fresh)
        throw ConfigError(at_line(file, line) + ": key \"" + key +
                          "\" is given twice (first at line " + std::to_string(prev->second + 1) +
                          ")");
      put(out, key, checked(key, it->second, at_line(file, line), origin));
    }
    return out;
  }

  static Entries read_user_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) throw ConfigError("config file \"" + path + "\" not found");
    if (!fs::is_regular_file(path, ec))
      throw ConfigError("config file \"" + path + "\" is not a regular file");
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) throw ConfigError("config file \"" + path + "\" cannot be read");
    return read_yaml(ss.str(), path);
  }

  static std::optional<Entries> read_embedded(const std::string& path) {
    auto text = embedded_file(path);
    if (!text) return std::nullopt;
    return read_yaml(*text, path);
  }

  // A value given as text (API override, command line): parsed as YAML; text that is not valid
  // YAML stays a plain string, as RecBole keeps strings its converter cannot evaluate.
  static Config::Entry read_text_value(const std::string& key, const std::string& text,
                                       const std::string& label) {
    YAML::Node raw;
    try {
      raw = YAML::Load(text);
    } catch (const YAML::Exception&) {
      raw = YAML::Node(text);
    }
    check_expanded_size(raw, label);
    try {
      return checked(key, raw, label, Origin{"", label});
    } catch (const ConfigError& e) {
      // YAML can read what was typed as something else ("," and "" read as null, "|" as a
      // block scalar): show the text itself and how to pass it as a string.
      const KeyDecl* decl = find_key(key);
      const bool scalar_key =
          decl != nullptr && (decl->type == KeyType::kBool || decl->type == KeyType::kInt ||
                              decl->type == KeyType::kFloat || decl->type == KeyType::kString);
      const bool misread =
          (decl != nullptr && raw.IsNull()) ||
          (scalar_key && (!raw.IsScalar() || (raw.Scalar().empty() && !text.empty())));
      if (!misread) throw;
      const std::string read = raw.IsNull() ? "null" : "\"" + node_text(raw) + "\"";
      if (text.empty()) throw ConfigError(std::string(e.what()) + " (the value is empty)");
      throw ConfigError(std::string(e.what()) + " (the text \"" + text + "\" reads as YAML " +
                        read + "; quote it to pass it as a string: '" + text + "')");
    }
  }

  // The embedded model file: exact name first, then a case-insensitive match (--model=bpr).
  static std::string model_yaml_path(const std::string& model) {
    std::string exact = "configs/model/" + model + ".yaml";
    if (embedded_file(exact)) return exact;
    for (const auto& f : embedded_files()) {
      std::string p = f.path;
      if (starts_with(p, "configs/model/") && to_lower(p) == to_lower(exact)) return p;
    }
    return "";
  }

  static const Config::Entry& entry_of(const Config& c, const std::string& key) {
    auto it = c.values_.find(key);
    if (it == c.values_.end()) {
      if (!find_key(key) && !find_model_key(c.model_, key))
        throw ConfigError(unknown_key_message(key));
      throw ConfigError("config key \"" + key + "\" is not set");
    }
    return it->second;
  }

  [[noreturn]] static void wrong_type(const Config::Entry& e, const std::string& key,
                                      const std::string& expected) {
    throw ConfigError(e.source + ": " + key + ": expected " + expected + ", got \"" +
                      node_text(e.value) + "\"");
  }

  // Completes eval_args and train_neg_sample_args from overall.yaml, then sets derived keys.
  static void complete_and_derive(Config& c, const Entries& overall) {
    complete_eval_args(c, overall);
    complete_train_neg_sample_args(c, overall);
    derive_valid_metric_bigger(c);
    check_value_metrics_mode(c);
    warn_if_valid_metric_not_computed(c);
  }

  static const YAML::Node& overall_default(const Entries& overall, const std::string& key) {
    auto it = overall.find(key);
    if (it == overall.end() || !it->second.value.IsMap())
      throw ConfigError(std::string(kOverallYaml) + ": " + key + " must be given in full there");
    return it->second.value;
  }

  static void complete_eval_args(Config& c, const Entries& overall) {
    const YAML::Node& base = overall_default(overall, "eval_args");
    auto it = c.values_.find("eval_args");
    if (it == c.values_.end()) return;
    YAML::Node merged(YAML::NodeType::Map);
    const YAML::Node& given = it->second.value;
    for (const char* k : {"split", "order", "group_by", "mode"}) {
      if (given[k])
        merged[k] = YAML::Clone(given[k]);
      else if (base[k])
        merged[k] = YAML::Clone(base[k]);
    }
    put(c.values_, "eval_args", {merged, it->second.source});
  }

  static void complete_train_neg_sample_args(Config& c, const Entries& overall) {
    const YAML::Node& base = overall_default(overall, "train_neg_sample_args");
    auto it = c.values_.find("train_neg_sample_args");
    if (it == c.values_.end()) return;
    const YAML::Node& given = it->second.value;
    const std::string source = it->second.source;
    YAML::Node merged(YAML::NodeType::Map);
    bool none = given.IsNull() ||
                (given["distribution"] && given["distribution"].as<std::string>() == "none");
    if (none) {
      // No sampling: one canonical form whatever way it was written.
      merged["distribution"] = "none";
      merged["sample_num"] = "0";
      merged["alpha"] = "1.0";
      merged["dynamic"] = "false";
      merged["candidate_num"] = "0";
    } else {
      for (const char* k : {"distribution", "sample_num", "alpha", "dynamic", "candidate_num"}) {
        if (given[k])
          merged[k] = YAML::Clone(given[k]);
        else if (base[k])
          merged[k] = YAML::Clone(base[k]);
      }
      if (merged["dynamic"].as<std::string>() == "true" &&
          parse_int(merged["candidate_num"].as<std::string>()).value_or(0) < 1)
        throw ConfigError(source +
                          ": train_neg_sample_args.candidate_num: expected int >= 1 "
                          "when dynamic is true, got \"" +
                          merged["candidate_num"].as<std::string>() + "\"");
    }
    put(c.values_, "train_neg_sample_args", {merged, source});
  }

  // RecBole recomputes valid_metric_bigger from valid_metric and ignores a value set by hand.
  static void derive_valid_metric_bigger(Config& c) {
    auto vm = c.values_.find("valid_metric");
    if (vm == c.values_.end() || vm->second.value.IsNull()) return;
    std::string metric = vm->second.value.Scalar();
    metric = metric.substr(0, metric.find('@'));
    bool bigger = evaluator::bigger_is_better(metric);
    auto old = c.values_.find("valid_metric_bigger");
    if (old != c.values_.end() && old->second.source != kDerived &&
        old->second.value.Scalar() != (bigger ? "true" : "false"))
      log::warning(old->second.source + ": valid_metric_bigger is derived from valid_metric (" +
                   vm->second.value.Scalar() + "); the value given is ignored");
    put(c.values_, "valid_metric_bigger", {YAML::Node(bigger ? "true" : "false"), kDerived});
  }

  // Value metrics are computed from (score, label) rows: the labelled rows of the labeled mode,
  // or the positives and sampled negatives of uniN and popN. Full ranking has no such rows
  // (RecBole refuses the combination too).
  static void check_value_metrics_mode(const Config& c) {
    auto ms = c.values_.find("metrics");
    auto ea = c.values_.find("eval_args");
    if (ms == c.values_.end() || ea == c.values_.end() || !ms->second.value.IsSequence()) return;
    const evaluator::MetricInfo* value_metric = nullptr;
    for (const auto& m : ms->second.value) {
      const evaluator::MetricInfo* row = evaluator::find_metric(m.Scalar());
      if (row != nullptr && !row->is_ranking()) value_metric = row;
    }
    const YAML::Node mode = ea->second.value["mode"];
    if (value_metric == nullptr || !mode.IsMap()) return;
    for (const char* phase : {"valid", "test"}) {
      if (mode[phase] && mode[phase].Scalar() == "full")
        throw ConfigError(ms->second.source + ": metrics: " + value_metric->name +
                          " is a value metric: it needs labelled rows (eval_args mode labeled) "
                          "or sampled negatives (uniN, popN), not full ranking (eval_args "
                          "mode." +
                          phase + " is full)");
    }
  }

  // RecBole fails at the first validation when valid_metric is not computed; say so early.
  static void warn_if_valid_metric_not_computed(const Config& c) {
    auto vm = c.values_.find("valid_metric");
    auto ms = c.values_.find("metrics");
    auto tk = c.values_.find("topk");
    if (vm == c.values_.end() || ms == c.values_.end() || tk == c.values_.end()) return;
    std::string v = vm->second.value.Scalar();
    std::string name = v.substr(0, v.find('@'));
    bool computed = false;
    for (const auto& m : ms->second.value)
      if (to_lower(m.Scalar()) == to_lower(name)) computed = true;
    if (computed && v.find('@') != std::string::npos) {
      std::string k = v.substr(v.find('@') + 1);
      computed = false;
      for (const auto& t : tk->second.value)
        if (t.Scalar() == k) computed = true;
    }
    if (!computed)
      log::warning(vm->second.source + ": valid_metric " + v + " is not among the computed " +
                   "metrics (metrics " + node_text(ms->second.value) + ", topk " +
                   node_text(tk->second.value) + "); validation will not find it");
  }

  static Config build(const ConfigSources& sources) {
    // External layers, lowest first: user files in order, API overrides, command line. Each value
    // is checked where it is read, so an error names its own source even if overridden later.
    std::vector<Entries> external;
    for (const auto& f : sources.config_files) external.push_back(read_user_file(f));
    Entries api;
    for (const auto& [k, v] : sources.api_overrides)
      put(api, k, read_text_value(k, v, "API override"));
    external.push_back(std::move(api));
    Entries cli;
    for (const auto& [k, v] : sources.command_line)
      put(cli, k, read_text_value(k, v, "command line --" + k));
    external.push_back(std::move(cli));

    // model and dataset: the explicit fields win, else the highest external layer naming them.
    auto pick = [&](const std::string& given, const std::string& given_source,
                    const std::string& key) -> std::pair<std::string, std::string> {
      if (!given.empty()) return {given, given_source.empty() ? "API argument" : given_source};
      for (auto layer = external.rbegin(); layer != external.rend(); ++layer) {
        auto it = layer->find(key);
        if (it != layer->end() && !it->second.value.IsNull())
          return {it->second.value.Scalar(), it->second.source};
      }
      return {"", ""};
    };
    auto [model, model_source] = pick(sources.model, sources.model_source, "model");
    auto [dataset, dataset_source] = pick(sources.dataset, sources.dataset_source, "dataset");
    if (model.empty() && !sources.default_model.empty())
      std::tie(model, model_source) = std::pair{sources.default_model, std::string("default")};
    if (dataset.empty() && !sources.default_dataset.empty())
      std::tie(dataset, dataset_source) =
          std::pair{sources.default_dataset, std::string("default")};

    // Internal layers: overall < model < dataset defaults < the dataset's own file.
    std::vector<Entries> internal;
    auto overall = read_embedded(kOverallYaml);
    if (!overall) throw ConfigError(std::string(kOverallYaml) + " is not embedded in the library");
    internal.push_back(*overall);
    if (!model.empty()) {
      std::string path = model_yaml_path(model);
      if (!path.empty()) internal.push_back(*read_embedded(path));
    }
    if (auto d = read_embedded(kDatasetDefaultYaml)) internal.push_back(*d);
    if (!dataset.empty()) {
      if (auto d = read_embedded("configs/dataset/" + dataset + ".yaml")) internal.push_back(*d);
    }
    // The task's presets (RecBole's quick_start_config: sequential.yaml, context-aware.yaml and
    // its ml-100k addition) sit above the dataset files and below every user source.
    if (!model.empty()) {
      const std::string task = model_task(model);
      if (!task.empty()) {
        if (auto d = read_embedded("configs/preset/" + task + ".yaml")) internal.push_back(*d);
        if (!dataset.empty())
          if (auto d = read_embedded("configs/preset/" + task + "_" + dataset + ".yaml"))
            internal.push_back(*d);
      }
    }

    Config c;
    c.model_ = model;
    c.dataset_ = dataset;
    for (const auto* layers : {&internal, &external})
      for (const auto& layer : *layers)
        for (const auto& [k, e] : layer) put(c.values_, k, e);
    if (!model.empty()) put(c.values_, "model", {YAML::Node(model), model_source});
    if (!dataset.empty()) put(c.values_, "dataset", {YAML::Node(dataset), dataset_source});
    check_model_keys(c);
    complete_and_derive(c, *overall);
    return c;
  }

  static void set(Config& c, const std::string& key, const std::string& text,
                  const std::string& source) {
    if (key == "model" || key == "dataset")
      throw ConfigError(source + ": " + key +
                        ": cannot be changed after the Config is built (its YAML defaults are "
                        "already merged); build a new Config");
    put(c.values_, key, read_text_value(key, text, source));
    check_model_keys(c);
    auto overall = read_embedded(kOverallYaml);
    complete_and_derive(c, *overall);
  }
};

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

ConfigSources parse_command_line(int argc, const char* const* argv,
                                 const std::vector<std::string>& tool_keys,
                                 std::map<std::string, std::string>* tool_values) {
  ConfigSources s;
  std::map<std::string, std::string> seen;  // key -> value, to catch contradictions
  auto remember = [&](const std::string& name, const std::string& value) {
    auto [it, fresh] = seen.emplace(name, value);
    if (!fresh && it->second != value)
      throw ConfigError("command line --" + name + ": given twice with different values (\"" +
                        it->second + "\" and \"" + value + "\")");
    return fresh;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i] ? argv[i] : "";
    size_t eq = tok.find('=');
    std::string name = starts_with(tok, "--")
                           ? tok.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)
                           : "";
    if (!name.empty() && std::find(tool_keys.begin(), tool_keys.end(), name) != tool_keys.end()) {
      // A tool's own option; a bare flag (--help) reads as "true".
      std::string value = eq == std::string::npos ? "true" : tok.substr(eq + 1);
      if (remember(name, value) && tool_values) (*tool_values)[name] = value;
      continue;
    }
    if (name.empty() || eq == std::string::npos)
      throw ConfigError("command line: expected --key=value, got \"" + tok + "\"");
    const std::string value = tok.substr(eq + 1);
    if (!remember(name, value)) continue;  // same key, same value: harmless repeat
    if ((name == "model" || name == "dataset") && value.empty())
      throw ConfigError("command line --" + name + ": expected a " + name +
                        " name, got an empty value");
    if (name == "model") {
      s.model = value;
      s.model_source = "command line --model";
    } else if (name == "dataset") {
      s.dataset = value;
      s.dataset_source = "command line --dataset";
    } else if (name == "config_files") {
      std::string cur;
      for (char c : value + ",") {
        if (c == ',' || c == ' ') {
          if (!cur.empty()) s.config_files.push_back(cur);
          cur.clear();
        } else {
          cur += c;
        }
      }
    } else {
      s.command_line.emplace_back(name, value);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

Config Config::build(const ConfigSources& sources) { return ConfigBuilder::build(sources); }

bool Config::has(const std::string& key) const { return values_.count(key) > 0; }

bool Config::is_null(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() || it->second.value.IsNull();
}

bool Config::get_bool(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  std::optional<bool> b;
  if (e.value.IsScalar()) b = parse_bool(e.value.Scalar());
  if (!b) ConfigBuilder::wrong_type(e, key, "bool");
  return *b;
}

int64_t Config::get_int(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  std::optional<int64_t> i;
  if (e.value.IsScalar()) i = parse_int(e.value.Scalar());
  if (!i) ConfigBuilder::wrong_type(e, key, "int");
  return *i;
}

double Config::get_double(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  std::optional<double> d;
  if (e.value.IsScalar()) d = parse_float(e.value.Scalar());
  if (!d) ConfigBuilder::wrong_type(e, key, "float");
  return *d;
}

std::string Config::get_string(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  if (!e.value.IsScalar()) ConfigBuilder::wrong_type(e, key, "string");
  return e.value.Scalar();
}

std::vector<int64_t> Config::get_int_list(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  if (!e.value.IsSequence()) ConfigBuilder::wrong_type(e, key, "list of int");
  std::vector<int64_t> out;
  for (const auto& x : e.value) {
    std::optional<int64_t> i;
    if (x.IsScalar()) i = parse_int(x.Scalar());
    if (!i) ConfigBuilder::wrong_type(e, key, "list of int");
    out.push_back(*i);
  }
  return out;
}

std::vector<double> Config::get_double_list(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  if (!e.value.IsSequence()) ConfigBuilder::wrong_type(e, key, "list of float");
  std::vector<double> out;
  for (const auto& x : e.value) {
    std::optional<double> d;
    if (x.IsScalar()) d = parse_float(x.Scalar());
    if (!d) ConfigBuilder::wrong_type(e, key, "list of float");
    out.push_back(*d);
  }
  return out;
}

std::vector<std::string> Config::get_string_list(const std::string& key) const {
  const Entry& e = ConfigBuilder::entry_of(*this, key);
  if (!e.value.IsSequence()) ConfigBuilder::wrong_type(e, key, "list of string");
  std::vector<std::string> out;
  for (const auto& x : e.value) {
    if (!x.IsScalar()) ConfigBuilder::wrong_type(e, key, "list of string");
    out.push_back(x.Scalar());
  }
  return out;
}

YAML::Node Config::node(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return YAML::Node(YAML::NodeType::Null);
  return YAML::Clone(it->second.value);
}

std::string Config::source(const std::string& key) const {
  return ConfigBuilder::entry_of(*this, key).source;
}

void Config::set(const std::string& key, const std::string& yaml_value, const std::string& source) {
  ConfigBuilder::set(*this, key, yaml_value, source);
}

std::string Config::dump() const {
  std::ostringstream os;
  std::string section;
  for (const ConfigEntry& e : config_entries(*this)) {
    if (e.section != section) {
      if (!section.empty()) os << "\n";
      section = e.section;
      os << section << ":\n";
    }
    os << e.key << " = " << e.value << "    (" << e.source << ")\n";
  }
  return os.str();
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, e] : values_) out.push_back(k);
  return out;
}

}  // namespace recbole::config

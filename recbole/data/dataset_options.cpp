#include "recbole/data/dataset_options.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "recbole/config/config.h"
#include "recbole/data/dataset_location.h"
#include "recbole/data/interval.h"
#include "recbole/utils/error.h"
#include "recbole/utils/text.h"

namespace recbole::data {
namespace {

using recbole::config::Config;

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

// Reads one key of a Config, with errors that name the key and its source.
class Reader {
 public:
  explicit Reader(const Config& config) : config_(config) {}

  bool present(const std::string& key) const { return config_.has(key) && !config_.is_null(key); }

  ConfigError error(const std::string& key, const std::string& what, const YAML::Node& got) const {
    std::string where = config_.source(key);
    return ConfigError((where.empty() ? "" : where + ": ") + key + ": expected " + what + ", got " +
                       flow_text(got));
  }

  void string(const std::string& key, std::string& out) const {
    if (!present(key)) return;
    const YAML::Node n = config_.node(key);
    if (!n.IsScalar()) throw error(key, "a string", n);
    out = n.as<std::string>();
  }

  void boolean(const std::string& key, bool& out) const {
    if (!present(key)) {
      if (config_.has(key)) out = false;  // null: RecBole's "is True" tests fail
      return;
    }
    const YAML::Node n = config_.node(key);
    try {
      out = n.as<bool>();
    } catch (const YAML::Exception&) {
      throw error(key, "true or false", n);
    }
  }

  std::vector<std::string> string_list(const std::string& key, const YAML::Node& n) const {
    std::vector<std::string> out;
    if (n.IsScalar()) {
      out.push_back(n.as<std::string>());
      return out;
    }
    if (!n.IsSequence()) throw error(key, "a list of names", n);
    for (const YAML::Node& e : n) {
      if (!e.IsScalar()) throw error(key, "a list of names", n);
      out.push_back(e.as<std::string>());
    }
    return out;
  }

  // {suffix: [columns]} maps of load_col / unload_col / unused_col.
  std::map<std::string, std::vector<std::string>> column_map(const std::string& key) const {
    std::map<std::string, std::vector<std::string>> out;
    const YAML::Node n = config_.node(key);
    if (!n.IsMap()) throw error(key, "a map {inter: [columns], user: [...], item: [...]}", n);
    for (const auto& kv : n) {
      const std::string suffix = kv.first.as<std::string>();
      if (kv.second.IsNull()) continue;
      out[suffix] = string_list(key + "." + suffix, kv.second);
    }
    return out;
  }

  const Config& config() const { return config_; }

 private:
  const Config& config_;
};

void read_eval_args(const Reader& r, EvalArgs& args) {
  const std::string key = "eval_args";
  if (!r.present(key)) return;
  const YAML::Node n = r.config().node(key);
  if (!n.IsMap()) throw r.error(key, "a map {split: ..., order: ..., group_by: ..., mode: ...}", n);

  if (const YAML::Node split = n["split"]; split && !split.IsNull()) {
    if (!split.IsMap() || split.size() != 1) {
      throw r.error(key, "split with exactly one of RS: [train, valid, test] or LS: mode", split);
    }
    const std::string kind = split.begin()->first.as<std::string>();
    const YAML::Node value = split.begin()->second;
    if (kind == "RS") {
      if (!value.IsSequence() || value.size() != 3) {
        throw r.error(key, "split.RS as a list of three ratios [train, valid, test]", value);
      }
      std::vector<double> ratios;
      double total = 0;
      for (const YAML::Node& e : value) {
        double v = 0;
        try {
          v = e.as<double>();
        } catch (const YAML::Exception&) {
          throw r.error(key, "split.RS ratios as numbers >= 0", value);
        }
        if (!(v >= 0)) throw r.error(key, "split.RS ratios as numbers >= 0", value);
        ratios.push_back(v);
        total += v;
      }
      if (!(total > 0)) throw r.error(key, "split.RS ratios with a positive sum", value);
      args.split = EvalArgs::SplitKind::kRatio;
      args.ratios = ratios;
    } else if (kind == "LS") {
      const std::string mode = value.IsScalar() ? value.as<std::string>() : "";
      if (mode != "valid_and_test" && mode != "valid_only" && mode != "test_only") {
        throw r.error(key, "split.LS one of valid_and_test, valid_only, test_only", value);
      }
      args.split = EvalArgs::SplitKind::kLeaveOneOut;
      args.leave_one_mode = mode;
    } else {
      throw r.error(key, "split RS or LS (" + kind + " is not supported)", split);
    }
  }
  if (const YAML::Node order = n["order"]; order && !order.IsNull()) {
    const std::string v = order.IsScalar() ? order.as<std::string>() : "";
    if (v != "RO" && v != "TO") throw r.error(key, "order RO or TO", order);
    args.order = v;
  }
  if (const YAML::Node group = n["group_by"]; group) {
    const std::string v = group.IsNull() ? "none" : to_lower(group.as<std::string>());
    if (v != "user" && v != "none") throw r.error(key, "group_by user or none", group);
    args.group_by = v;
  }
  if (const YAML::Node mode = n["mode"]; mode && !mode.IsNull()) {
    if (mode.IsScalar()) {
      args.valid_mode = args.test_mode = mode.as<std::string>();
    } else if (mode.IsMap()) {
      if (mode["valid"]) args.valid_mode = mode["valid"].as<std::string>();
      if (mode["test"]) args.test_mode = mode["test"].as<std::string>();
    } else {
      throw r.error(key, "mode as a string or {valid: ..., test: ...}", mode);
    }
  }
}

}  // namespace

std::string DatasetOptions::dataset_dir() const {
  return (std::filesystem::path(data_path) / dataset).string();
}

DatasetOptions DatasetOptions::from_config(const Config& config) {
  DatasetOptions o;
  const Reader r(config);
  o.dataset = config.dataset();
  r.string("dataset", o.dataset);
  if (o.dataset.empty()) o.dataset = config.dataset();
  r.string("data_path", o.data_path);
  r.string("field_separator", o.field_separator);
  r.string("seq_separator", o.seq_separator);
  r.string("USER_ID_FIELD", o.uid_field);
  r.string("ITEM_ID_FIELD", o.iid_field);
  r.string("RATING_FIELD", o.rating_field);
  r.string("TIME_FIELD", o.time_field);
  r.string("LABEL_FIELD", o.label_field);
  if (o.uid_field == o.iid_field)
    throw ConfigError(config.source("USER_ID_FIELD") + ": USER_ID_FIELD and ITEM_ID_FIELD (" +
                      config.source("ITEM_ID_FIELD") + ") are both \"" + o.uid_field +
                      "\"; expected two different columns of the .inter file");

  if (config.has("load_col")) {
    if (config.is_null("load_col")) {
      o.load_col.reset();
    } else {
      o.load_col = r.column_map("load_col");
    }
  }
  if (r.present("unload_col")) o.unload_col = r.column_map("unload_col");
  if (r.present("unused_col")) o.unused_col = r.column_map("unused_col");

  if (r.present("rm_dup_inter")) {
    r.string("rm_dup_inter", o.rm_dup_inter);
    if (o.rm_dup_inter != "first" && o.rm_dup_inter != "last") {
      throw r.error("rm_dup_inter", "first, last or null", config.node("rm_dup_inter"));
    }
  } else if (config.has("rm_dup_inter")) {
    o.rm_dup_inter.clear();
  }

  if (r.present("val_interval")) {
    const YAML::Node n = config.node("val_interval");
    if (!n.IsMap()) {
      throw r.error("val_interval", "a map {field: \"[a,b)\" or field: [tokens]}", n);
    }
    for (const auto& kv : n) {
      ValueFilter f;
      f.field = kv.first.as<std::string>();
      if (kv.second.IsSequence()) {
        f.is_token_list = true;
        f.tokens = r.string_list("val_interval." + f.field, kv.second);
      } else if (kv.second.IsScalar()) {
        f.interval = kv.second.as<std::string>();
        parse_intervals(f.interval, "val_interval." + f.field);  // fail early
      } else {
        throw r.error("val_interval", "an interval string or a token list for " + f.field,
                      kv.second);
      }
      o.val_interval.push_back(std::move(f));
    }
  }
  r.boolean("filter_inter_by_user_or_item", o.filter_inter_by_user_or_item);
  for (auto [key, out] :
       {std::pair<const char*, std::string*>{"user_inter_num_interval", &o.user_inter_num_interval},
        {"item_inter_num_interval", &o.item_inter_num_interval}}) {
    if (r.present(key)) {
      r.string(key, *out);
      parse_intervals(*out, key);
    } else if (config.has(key)) {
      out->clear();
    }
  }

  if (r.present("threshold")) {
    const YAML::Node n = config.node("threshold");
    if (!n.IsMap() || n.size() != 1) {
      throw r.error("threshold", "a map with exactly one field, e.g. {rating: 4}", n);
    }
    try {
      o.threshold =
          std::make_pair(n.begin()->first.as<std::string>(), n.begin()->second.as<double>());
    } catch (const YAML::Exception&) {
      throw r.error("threshold", "a map with exactly one field, e.g. {rating: 4}", n);
    }
  }
  if (r.present("normalize_field")) {
    o.normalize_field = r.string_list("normalize_field", config.node("normalize_field"));
  }
  r.boolean("normalize_all", o.normalize_all);
  if (!o.normalize_field.empty() && o.normalize_all) {
    throw ConfigError(config.source("normalize_all") +
                      ": normalize_all: cannot be true while normalize_field is set (" +
                      config.source("normalize_field") + "); set one of them to null");
  }
  if (r.present("benchmark_filename")) {
    o.benchmark_filename = r.string_list("benchmark_filename", config.node("benchmark_filename"));
    for (size_t i = 0; i < o.benchmark_filename.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (o.benchmark_filename[i] == o.benchmark_filename[j])
          throw r.error("benchmark_filename",
                        "a different file part for each of train, valid and test (\"" +
                            o.benchmark_filename[i] + "\" is given twice)",
                        config.node("benchmark_filename"));
  }
  for (auto [key, out] : {std::pair{"alias_of_user_id", &o.user_aliases},
                          std::pair{"alias_of_item_id", &o.item_aliases},
                          std::pair{"alias_of_entity_id", &o.entity_aliases},
                          std::pair{"alias_of_relation_id", &o.relation_aliases}})
    if (r.present(key)) *out = r.string_list(key, config.node(key));
  if (r.present("preload_weight")) {
    const YAML::Node n = config.node("preload_weight");
    if (!n.IsMap()) throw r.error("preload_weight", "a map {id field: value field}", n);
    for (const auto& kv : n) {
      if (!kv.second.IsScalar())
        throw r.error("preload_weight", "a map {id field: value field}", n);
      o.preload_weight.emplace_back(kv.first.as<std::string>(), kv.second.as<std::string>());
    }
  }
  r.string("HEAD_ENTITY_ID_FIELD", o.kg.head_field);
  r.string("TAIL_ENTITY_ID_FIELD", o.kg.tail_field);
  r.string("RELATION_ID_FIELD", o.kg.relation_field);
  r.string("ENTITY_ID_FIELD", o.kg.entity_field);
  r.boolean("kg_reverse_r", o.kg.reverse_relations);
  for (auto [key, out] :
       {std::pair<const char*, std::string*>{"entity_kg_num_interval", &o.kg.entity_interval},
        {"relation_kg_num_interval", &o.kg.relation_interval}}) {
    if (r.present(key)) {
      r.string(key, *out);
      parse_intervals(*out, key);
    } else if (config.has(key)) {
      out->clear();
    }
  }
  if (o.knowledge() && !o.load_col->count("link"))
    throw ConfigError(config.source("load_col") +
                      ": load_col: has a kg entry but no link entry; the knowledge graph needs "
                      "the item-entity link too, e.g. link: [item_id, entity_id]");
  if (o.kg.head_field == o.kg.tail_field)
    throw ConfigError(config.source("HEAD_ENTITY_ID_FIELD") +
                      ": HEAD_ENTITY_ID_FIELD and TAIL_ENTITY_ID_FIELD are both \"" +
                      o.kg.head_field + "\"; expected two different columns of the .kg file");
  read_eval_args(r, o.eval_args);
  if (r.present("seed")) o.seed = config.get_int("seed");
  // A dataset missing from data_path is read where recbole-cpp ships it, if it does (the same
  // lookup as the one that decides whether to download: dataset_location.h).
  if (o.benchmark_filename.empty()) {
    const DatasetLocation loc =
        locate_dataset(o.dataset, o.data_path, !config.is_null("download_url"));
    if (loc.copy == DatasetLocation::Copy::kShipped) o.data_path = loc.data_path;
  }
  return o;
}

}  // namespace recbole::data

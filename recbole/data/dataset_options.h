#pragma once
// Everything the data pipeline reads from the configuration, as plain values. Defaults are
// RecBole's (overall.yaml + sample.yaml), so tests can build options directly; the trainer
// builds them with from_config.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recbole/data/knowledge_graph.h"

namespace recbole::config {
class Config;
}

namespace recbole::data {

// eval_args: how the interactions are ordered and split.
struct EvalArgs {
  enum class SplitKind { kRatio, kLeaveOneOut };  // RS / LS
  SplitKind split = SplitKind::kRatio;
  std::vector<double> ratios{0.8, 0.1, 0.1};      // RS: train, valid, test (any positive scale)
  std::string leave_one_mode = "valid_and_test";  // LS: valid_and_test | valid_only | test_only
  std::string order = "RO";                       // RO (random) | TO (by time field)
  std::string group_by = "user";                  // user | none (RS only; LS always by user)
  std::string valid_mode = "full";                // full | uniN | popN | labeled (evaluator's)
  std::string test_mode = "full";
};

// One val_interval entry: a float field keeps rows inside `interval`; a token field keeps rows
// whose raw token is one of `tokens`.
struct ValueFilter {
  std::string field;
  bool is_token_list = false;
  std::string interval;             // when !is_token_list, e.g. "[4,inf)"
  std::vector<std::string> tokens;  // when is_token_list
};

struct DatasetOptions {
  std::string dataset;  // name: files are <data_path>/<dataset>/<dataset>.inter ...
  // The user's data_path, or from_config's choice of a shipped copy's folder when the user's has
  // no such dataset (recbole/data/dataset_location.h).
  std::string data_path = "dataset/";
  std::string field_separator = "\t";
  std::string seq_separator = " ";

  std::string uid_field = "user_id";
  std::string iid_field = "item_id";
  std::string rating_field = "rating";
  std::string time_field = "timestamp";
  std::string label_field = "label";

  // Columns per file suffix ("inter", "user", "item"). nullopt: every column of every file.
  // Otherwise a suffix absent from the map is not loaded, and the value ["*"] loads every column.
  std::optional<std::map<std::string, std::vector<std::string>>> load_col =
      std::map<std::string, std::vector<std::string>>{{"inter", {"user_id", "item_id"}}};
  std::map<std::string, std::vector<std::string>> unload_col;
  // Loaded and used for preprocessing (e.g. time ordering) but not part of the split output.
  std::map<std::string, std::vector<std::string>> unused_col;

  std::string rm_dup_inter;  // "" (keep duplicates), "first" or "last"
  std::vector<ValueFilter> val_interval;
  bool filter_inter_by_user_or_item = true;
  std::string user_inter_num_interval = "[0,inf)";  // "" = no filter
  std::string item_inter_num_interval = "[0,inf)";

  std::optional<std::pair<std::string, double>> threshold;  // field, value
  std::vector<std::string> normalize_field;                 // empty = not set
  bool normalize_all = false;

  std::vector<std::string> benchmark_filename;  // e.g. {train, valid, test}; empty = not set

  // Token fields remapped together with the user (item) ids: alias_of_user_id (_item_id).
  std::vector<std::string> user_aliases, item_aliases;
  // Token fields of the .inter/.user/.item files remapped into the knowledge graph's entity
  // (relation) ids: alias_of_entity_id (_relation_id); knowledge task only.
  std::vector<std::string> entity_aliases, relation_aliases;

  // preload_weight: (id field, value field) pairs, in the order given (preload_weight.h).
  std::vector<std::pair<std::string, std::string>> preload_weight;

  // The knowledge graph's fields and filters; read when load_col has a "kg" entry.
  KnowledgeOptions kg;
  bool knowledge() const { return load_col && load_col->count("kg") > 0; }

  EvalArgs eval_args;
  int64_t seed = 2020;

  // <data_path>/<dataset>
  std::string dataset_dir() const;

  // Reads the dataset and eval keys of a built Config. A value of the wrong shape is a
  // recbole::ConfigError naming the key and where it was set.
  static DatasetOptions from_config(const recbole::config::Config& config);
};

}  // namespace recbole::data

#pragma once
// Dataset: the atomic files of one dataset, loaded and preprocessed exactly in RecBole's order,
// not yet split (see split.h).
//
//   load .inter (or the benchmark parts), .user, .item   (columns chosen by load_col/unload_col)
//   filters (skipped with benchmark_filename):
//     missing user/item ids -> rm_dup_inter -> val_interval -> filter_inter_by_user_or_item
//     -> user/item_inter_num_interval to a fixed point
//   remap every token field (0 = "[PAD]"; user and item ids by first appearance in the filtered
//     .inter, then ids only in .user/.item) -> .user/.item re-indexed so that row i = id i
//   -> NaN fill (token 0, float column mean, sequence empty) -> threshold -> normalize
//
// Deliberate differences from RecBole: rm_dup_inter sorts by time with a stable sort (pandas uses
// a non-stable quicksort, so ties may be ordered differently); CRLF files are accepted; a
// load_col column missing from a header is an error; duplicate ids in .user/.item keep their
// first row; additional feature files are not supported. With load_col.kg, the knowledge graph
// loads beside the tables and drops the interactions of unlinked items (knowledge_graph.h).
//
// Id aliases: alias_of_user_id / alias_of_item_id fields are remapped with the user / item ids;
// alias_of_entity_id / alias_of_relation_id fields (knowledge task) are remapped, after the
// item/entity merge, into the knowledge graph's entity / relation ids (a linked entity is its
// item's id). Deliberate difference: a token of an entity (relation) alias that is not an entity
// (relation) of the filtered knowledge graph becomes the padding id 0, with a warning; RecBole
// gives it a new id after the graph's own, which no triple uses. Each alias field is in one
// group only (an error otherwise, as RecBole), and must be a loaded token or token_seq column of
// the .inter, .user or .item file.
//
// preload_weight: the matrices are built last, from the final tables (preload_weight.h).
//
// DatasetLoader (dataset_loader.h) runs these steps, each stage in a file pair of its own.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/knowledge_graph.h"
#include "recbole/data/table.h"

namespace recbole::data {

struct PreloadWeights;  // recbole/data/preload_weight.h (holds libtorch tensors)

// Times and sizes of one load, for benchmarks and logs.
struct LoadStats {
  double read_seconds = 0;        // parsing the atomic files (wall clock)
  double preprocess_seconds = 0;  // filters, remap, fill, threshold, normalize (wall clock)
  double read_cpu_seconds = 0;    // the same two phases in process CPU time
  double preprocess_cpu_seconds = 0;
  int64_t bytes_read = 0;  // size of the files read
  int64_t rows_read = 0;   // interaction rows before filtering
};

class Dataset {
 public:
  // Loads and preprocesses the dataset described by `options`. Throws recbole::DataError (files
  // missing or malformed, every row filtered away) or recbole::ConfigError (bad filter values).
  static Dataset load(const DatasetOptions& options);

  const std::string& name() const { return name_; }
  const DatasetOptions& options() const { return options_; }

  // Counts include the padding id 0, as RecBole's user_num / item_num.
  int64_t n_users() const { return n_users_; }
  int64_t n_items() const { return n_items_; }
  int64_t n_inters() const { return inter_.n_rows(); }

  // Remapped ids per interaction row: [n_inters] int32 in [1, n_users) / [1, n_items).
  const std::vector<int32_t>& inter_users() const;
  const std::vector<int32_t>& inter_items() const;

  // Original token of a remapped id; id 0 is "[PAD]".
  const std::string& user_token(int32_t id) const;
  const std::string& item_token(int32_t id) const;
  // Remapped id of an original token, or -1 (RecBole's token2id).
  int32_t user_id(std::string_view token) const;
  int32_t item_id(std::string_view token) const;

  // RecBole's statistics text: name, users (with pad) and their average actions, items likewise,
  // inters, sparsity 1 - inters / (users * items) in percent at full precision, remaining fields.
  std::string summary() const;
  // Mean number of interactions of the users (items) present in the interactions.
  double avg_actions_of_users() const;
  double avg_actions_of_items() const;
  // 1 - n_inters / n_users / n_items (a fraction, not percent).
  double sparsity() const;

  // The tables after preprocessing. user_table()/item_table() are null when not loaded; when
  // loaded, row i describes id i (row 0 = padding).
  const Table& inter_table() const { return inter_; }
  const Table* user_table() const { return user_ ? &*user_ : nullptr; }
  const Table* item_table() const { return item_ ? &*item_ : nullptr; }
  bool has_inter_field(std::string_view name) const { return inter_.has(name); }
  // A float column of the interactions ([n_inters] double); DataError when absent or not float.
  const std::vector<double>& inter_floats(std::string_view name) const;

  // Field names in RecBole's order (inter, then user, then item columns; label last).
  const std::vector<std::string>& field_names() const { return field_names_; }
  // Interaction columns that are written out and handed to training: all but unused_col.inter.
  bool is_unused_inter_field(std::string_view name) const;

  // The knowledge graph (load_col has kg and link entries), or null.
  const KnowledgeGraph* knowledge_graph() const { return kg_ ? &*kg_ : nullptr; }

  // preload_weight's matrices, one per id field named there (preload_weight.h); empty when the
  // key is not set. Models get them through ModelContext::preload_weights.
  const PreloadWeights& preload_weights() const;

  // With benchmark_filename: the number of rows of each part, in order (train, valid, test).
  const std::vector<int64_t>& benchmark_sizes() const { return benchmark_sizes_; }

  const LoadStats& load_stats() const { return stats_; }

 private:
  Dataset() = default;
  friend class DatasetLoader;

  std::string name_;
  DatasetOptions options_;
  Table inter_;
  std::optional<Table> user_;
  std::optional<Table> item_;
  std::optional<KnowledgeGraph> kg_;
  std::shared_ptr<const PreloadWeights> preload_;
  std::vector<std::string> field_names_;
  std::vector<int64_t> benchmark_sizes_;
  int64_t n_users_ = 0;
  int64_t n_items_ = 0;
  LoadStats stats_;
};

// Python's repr() of a float ("106.04453870625663", "1.0", "1e-05"), used for RecBole-identical
// statistics text.
std::string python_float_repr(double value);

}  // namespace recbole::data

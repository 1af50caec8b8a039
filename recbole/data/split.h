#pragma once
// Ordering and splitting of a loaded Dataset into train / valid / test, as RecBole's
// Dataset.build():
//   benchmark_filename set: the file blocks, in file order, are train, valid, test.
//   order RO: one torch randperm over all rows (random_order.h); TO: stable sort by the time
//     field (compared as float32, as RecBole sorts its float32 tensors).
//   split RS [r1, r2, r3]: per user group (group_by user) or over the whole ordered table
//     (group_by none), sizes from split_sizes_by_ratio; LS: leave-one-out per user.
//   Groups are visited in order of each user's first appearance in the ordered table.
#include <cstdint>
#include <string>
#include <vector>

#include "recbole/data/dataset.h"
#include "recbole/data/dataset_options.h"

namespace recbole::data {

// One part of the split. rows index the Dataset's interaction rows, in split order;
// users/items are the remapped ids of those rows. All three arrays have size().
struct Split {
  std::vector<int64_t> rows;
  std::vector<int32_t> users, items;
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
};

struct SplitDataset {
  Split train, valid, test;
};

// The training interactions one row each, in split order (duplicates kept), and the dataset's
// time field indexed by Split::rows (null when the dataset has no float time field): a part of
// the model context (models::ContextParts) that the interaction-split families give models
// weighing interactions by time (DiffRec's time-aware rows).
struct TrainInteractions {
  static constexpr const char* kPart =
      "the training interactions of an interaction split (the general or knowledge task)";
  const Split& split;
  const std::vector<double>* times = nullptr;
};

// Orders and splits per options.eval_args (or benchmark blocks). Throws DataError (TO without a
// loaded float time field) or ConfigError (bad eval_args). Large tables are split on all
// hardware threads; the result does not depend on their number.
SplitDataset split_dataset(const Dataset& dataset, const DatasetOptions& options);

// The order of the interaction rows before splitting (RO permutation or TO sort): [n_inters].
std::vector<int64_t> order_rows(const Dataset& dataset, const EvalArgs& eval_args, int64_t seed);

// RecBole's _calcu_split_ids: sizes of the parts of a group of `total` rows for `ratios`
// (normalised by their sum; truncation, remainder to the first part, then a row moved to each
// part whose ratio is positive but would get no row, last part first).
std::vector<int64_t> split_sizes_by_ratio(int64_t total, const std::vector<double>& ratios);

// Writes <out_dir>/<name>.train.inter, .valid.inter, .test.inter (directory created) with the
// original tokens and every interaction column except unused_col, each file written to a
// temporary name and renamed, so that they load back with benchmark_filename: [train, valid,
// test]. Float columns are written with their preprocessed values (normalised, filled),
// shortest round-trip text. Throws DataError on I/O errors.
void dump_split(const Dataset& dataset, const SplitDataset& split, const std::string& out_dir);

}  // namespace recbole::data

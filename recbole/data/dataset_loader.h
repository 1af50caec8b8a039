#pragma once
// DatasetLoader: Dataset::load's orchestrator. It runs the stages of a load in RecBole's order
// (dataset.h says what each does to the data), each stage in its own file pair:
//
//   id_aliases.h        the alias fields' parse vocabularies (and the checks of the alias keys)
//   dataset_files.h     read .inter (or the benchmark parts), .user, .item, and .kg / .link
//   id_aliases.h        every alias is a loaded token column
//   preload_weight.h    preload_weight's entries resolved against the tables as read
//   dataset_files.h     the field names in RecBole's order
//                       ── LoadStats: read time ──
//   row_filters.h       missing ids -> rm_dup_inter -> val_interval -> filter_inter_by_user_or_item
//                       -> user/item_inter_num_interval        (not with benchmark_filename)
//   knowledge_link.h    the triple-count and link filters      (likewise; with load_col.kg)
//   id_remap.h          every token field remapped, 0 = padding
//   knowledge_link.h    items and entities merged, the knowledge graph built; then id_aliases.h
//                       maps the entity / relation aliases into it
//   preload_weight.h    an id's rows agree on the preload values
//   id_remap.h          .user / .item re-indexed so that row i describes id i
//   value_transforms.h  NaN fill -> threshold -> normalize
//   preload_weight.h    the preload matrices, from the final tables
//                       ── LoadStats: preprocess time ──
//
// The stages pass the tables on as DatasetTables (dataset_tables.h); the loader moves them into
// the Dataset at the end. Dataset's accessors and statistics stay in dataset.cpp.
#include "recbole/data/dataset.h"
#include "recbole/data/dataset_options.h"

namespace recbole::data {

class DatasetLoader {
 public:
  // Dataset::load: the same contract and errors.
  static Dataset load(const DatasetOptions& options);
};

}  // namespace recbole::data

#pragma once
// The row filters of Dataset::load, RecBole's order (all skipped with benchmark_filename):
//   filter_missing_ids -> remove_duplication -> filter_by_value -> filter_inter_by_user_or_item
//   -> filter_by_inter_num (to a fixed point)
// The knowledge graph's link filter comes after them (knowledge_link.h).
//
//   in:  the tables as read (dataset_tables.h), token ids still the parse vocabularies'
//        provisional ids; `vocabularies` are those parse vocabularies (their sizes bound the user
//        and item ids)
//   out: the same tables with rows dropped, in place (row order kept, but remove_duplication's,
//        which sorts the interactions by the time field when it is loaded)
// Each filter that can empty a table ends with DatasetTables::check_not_empty, naming itself.
#include <string>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"

namespace recbole::data {

// Drops the rows of .user / .inter / .item without a user or item id (a warning per table that
// loses rows).
void filter_missing_ids(DatasetTables& tables, const DatasetOptions& options);

// rm_dup_inter ("first" / "last"): keeps one interaction per (user, item), the first or last in
// time order; the interactions come out sorted by the time field (ascending, NaN last, stable)
// when it is a loaded float column, in file order otherwise (with RecBole's warning).
void remove_duplication(DatasetTables& tables, const DatasetOptions& options,
                        const Vocabularies& vocabularies);

// val_interval: a float field keeps the rows inside the interval(s), a token field the rows whose
// token is listed, in every table that has the field. ConfigError for the wrong kind of value or
// a sequence field; DataError for a field that no table loads (field_names: the loaded fields,
// for the message).
void filter_by_value(DatasetTables& tables, const DatasetOptions& options,
                     const std::vector<std::string>& field_names);

// filter_inter_by_user_or_item: with a .user (.item) table, keeps the interactions whose user
// (item) has a row there.
void filter_inter_by_user_or_item(DatasetTables& tables, const DatasetOptions& options,
                                  const Vocabularies& vocabularies);

// user_inter_num_interval / item_inter_num_interval: RecBole's iterative core filter. Users
// (items) whose interaction count is outside the interval, and feature rows whose id has fewer
// interactions than the first interval's lower end, are dropped, with their interactions, until
// no id is banned. ConfigError for an unparsable interval.
void filter_by_inter_num(DatasetTables& tables, const DatasetOptions& options,
                         const Vocabularies& vocabularies);

}  // namespace recbole::data

#pragma once
// The id remap of Dataset::load (RecBole's _remap_ID_all, then its feature tables indexed by id).
//
// remap_token_fields
//   in:  the filtered tables, token ids the parse vocabularies' provisional ids (-1 = missing)
//   out: every token / token_seq column remapped to ids by first appearance, 0 = "[PAD]" (also
//        the id of a missing token), with a new vocabulary per id space:
//          users: the .inter column, the .user column, then alias_of_user_id's fields (listed
//                 order; each over .inter, .user, .item)
//          items: likewise with the .item column and alias_of_item_id
//          every other token field is its own id space, but for the entity / relation aliases,
//          which keep their provisional ids until the knowledge graph maps them (id_aliases.h)
//        and the number of user and item ids, padding included.
// reindex_feature_tables (after the knowledge graph's merge and the preload_weight check)
//   out: row i of the .user (.item) table describes id i; ids without a row get a missing row,
//        an id's repeated rows are dropped but the first (with a warning); and which rows came
//        from the file.
#include <cstdint>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/id_aliases.h"

namespace recbole::data {

struct IdCounts {
  int64_t n_users = 0;  // padding included
  int64_t n_items = 0;
};

IdCounts remap_token_fields(DatasetTables& tables, const DatasetOptions& options,
                            const IdAliases& aliases);

// Whether row i of the .user / .item table came from the file (empty when not loaded).
struct FeatureRowsFromFile {
  std::vector<uint8_t> user, item;
  // Per table of tables.all(): the flags, null for the interactions (every row is from the file).
  std::vector<const std::vector<uint8_t>*> per_table(const DatasetTables& tables) const;
};

FeatureRowsFromFile reindex_feature_tables(DatasetTables& tables, const DatasetOptions& options,
                                           const IdCounts& ids);

}  // namespace recbole::data

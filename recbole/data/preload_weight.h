#pragma once
// preload_weight: vectors given per id in an atomic file, as dense matrices for the models
// (RecBole's Dataset._preload_weight_matrix and get_preload_weight).
//
// An entry {id field: value field} names two columns of one file (.inter, .user or .item): a
// token id field and a float or float_seq value field. Its matrix has one row per remapped id
// of the id field ([num ids, width] float32 on the CPU, num ids = the id field's vocabulary
// size, pad included), the row of id i holding the value of the rows whose id is i:
//   float      width 1
//   float_seq  width = the longest sequence of the column as loaded (RecBole's field2seqlen);
//              shorter rows are zero-padded on the right, longer ones truncated
// Values are taken after filling and normalisation (RecBole builds the matrix last). Row 0 (the
// padding) and the rows of ids without a row in the file are zeros.
//
// Deliberate differences from RecBole: an id that has two rows with different values is a
// DataError (RecBole keeps the last row; rows repeating the same value are accepted); a value
// field that is not float/float_seq is an error (RecBole warns and skips the entry); row 0
// stays zero (RecBole's row 0 gets the fill value of the .user/.item row added for the padding
// id); the id field may be USER_ID_FIELD/ITEM_ID_FIELD of the .user/.item file (RecBole refuses
// it, its sources differ).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/table.h"

namespace recbole::data {

// The matrices of a dataset: id field → [num ids, width] float32, CPU. Empty when preload_weight
// is not set.
struct PreloadWeights {
  std::map<std::string, torch::Tensor> by_field;
};

// One preload_weight entry, resolved against the loaded tables.
struct PreloadSource {
  std::string id_field, value_field;
  size_t table = 0;   // index in the tables given to resolve_preload
  int64_t width = 1;  // 1 for float; the longest sequence as loaded for float_seq
};

// Resolves the entries against the loaded tables (in RecBole's order: .inter, .user, .item),
// before any filter. ConfigError naming preload_weight, the fields and the files: a field that
// is not a loaded column, two fields that are not in one file, an id field that is not token,
// a value field that is not float/float_seq.
std::vector<PreloadSource> resolve_preload(
    const std::vector<std::pair<std::string, std::string>>& entries,
    const std::vector<const Table*>& tables);

// After remapping, before the .user/.item tables are re-indexed by id: DataError when an id has
// two rows with different values (naming the file, the fields and the id's token).
void check_preload_ids(const std::vector<PreloadSource>& sources,
                       const std::vector<const Table*>& tables);

// The matrices, from the final tables. from_file[k] (null = every row) flags the rows of
// tables[k] that come from the file: the .user/.item tables hold a row for every id, and the
// rows added for ids the file lacks must stay zeros.
PreloadWeights build_preload(const std::vector<PreloadSource>& sources,
                             const std::vector<const Table*>& tables,
                             const std::vector<const std::vector<uint8_t>*>& from_file);

}  // namespace recbole::data

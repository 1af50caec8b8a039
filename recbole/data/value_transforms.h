#pragma once
// The value stage of Dataset::load, after the id remap and the feature tables' re-indexing, in
// RecBole's order: fill_nan -> set_label_by_threshold -> normalize.
//
//   in:  the remapped tables (id_remap.h); field_names: the loaded fields in RecBole's order
//   out: the same tables, values changed in place; set_label_by_threshold also adds / replaces
//        the label column and updates field_names
#include <string>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"

namespace recbole::data {

// Missing values: a token becomes 0 (padding), a float the column's mean over its present values
// (numpy's pairwise sum, the very mean pandas fills with; NaN when none is present); missing
// sequences are already empty.
void fill_nan(DatasetTables& tables);

// threshold {field: value}: the label column (label_field, float) is 1.0 where field >= value,
// else 0.0; the field itself is removed unless it is the label field. DataError when the field
// is not a loaded float column of the interactions.
void set_label_by_threshold(DatasetTables& tables, const DatasetOptions& options,
                            std::vector<std::string>& field_names);

// normalize_field (listed fields) or normalize_all (every float-like field): min-max to [0, 1]
// over each table's column; a column of one value becomes 1.0, with a warning. ConfigError when
// both keys are set; DataError for a listed field that is not loaded; a listed field that is not
// float-like is skipped with a warning.
void normalize(DatasetTables& tables, const DatasetOptions& options,
               const std::vector<std::string>& field_names);

}  // namespace recbole::data

#pragma once
// The serving hooks of the context task (tasks/serving_section.h): a context model predicts the
// label of a (user, item) row from the features of both, so its checkpoint carries the feature
// schema and the user-side and item-side feature columns (data/feature_schema.h layouts), and a
// query for user u scores every item i ≥ 1 by the model's full_sort_predict: predict over the
// rows (u, i) with their gathered features — the row the pipeline would build for that pair.
// Interaction-side input fields have no value for a pair that never happened: a checkpoint whose
// model reads one is refused at load, by name. Context models cannot score an item history (they
// read the user's own id and features).
//
// Task section layout (nested archive `task` of the serving section):
//   schema  string: JSON {"uid_field", "iid_field", "fields": [{"name", "type" (FieldType
//           number), "side" (0 inter, 1 user, 2 item), "num", "seq_len", "numerical",
//           "discretised" (absent before it existed: false)}]}
//   user    nested: one tensor per user-side input column, rows indexed by user id
//   item    nested: the same for the item side, rows indexed by item id
#include "tasks/serving_section.h"

namespace recbole::serving {

TaskServingHooks context_serving_hooks();

}  // namespace recbole::serving

#pragma once
// The serving hooks of the sequential task (tasks/serving_section.h): a sequential model scores
// from an item sequence, so its checkpoint carries every user's whole time-ordered sequence
// (training, valid and test items: what happened before the next item to recommend), and a query
// cuts the last MAX_ITEM_LIST_LENGTH items of it into item_seq [1, L] / item_seq_len [1], as the
// pipeline cuts a sample's input. A caller's own item history is taken in the order given,
// oldest first.
//
// Task section layout (nested archive `task` of the serving section):
//   offsets  int64 [n_users + 1]: user u's items are items[offsets[u], offsets[u + 1])
//   items    int32 [Σ]: every user's items in time order (ids in [1, n_items))
//   max_len  int64 [1]: MAX_ITEM_LIST_LENGTH of the run
#include "tasks/serving_section.h"

namespace recbole::serving {

TaskServingHooks sequential_serving_hooks();

}  // namespace recbole::serving

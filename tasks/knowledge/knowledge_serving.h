#pragma once
// The serving hooks of the knowledge task (tasks/serving_section.h): a knowledge model is rebuilt
// over its knowledge graph (its tables are sized by the entity and relation counts, and some
// build structures from the triples before their buffers are loaded), so the checkpoint carries
// the graph's ids. Queries are the general task's: users, scored by full_sort_predict.
//
// Task section layout (nested archive `task` of the serving section):
//   counts     int64 [3]: n_entities, n_relations (pad and [UI-Relation] included), linked items
//   heads, relations, tails   int32 [n_triples]
#include "tasks/serving_section.h"

namespace recbole::serving {

TaskServingHooks knowledge_serving_hooks();

}  // namespace recbole::serving

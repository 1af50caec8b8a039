#pragma once
// The knowledge graph's stages in Dataset::load (with load_col.kg; the graph itself and its own
// filters are in knowledge_graph.h):
//   after the row filters   filter_knowledge: the KG triples by their counts, then the link,
//                           then the interactions of items left without a link (RecBole's
//                           _filter_link)
//   after the id remap      merge_items_and_entities: items re-ordered (pad, unlinked, linked)
//                           and the graph's entities merged into the item ids
#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/knowledge_graph.h"

namespace recbole::data {

// in:  the filtered tables, provisional ids; `item_vocab` the item id field's parse vocabulary.
// out: the interactions of unlinked items dropped (logged), in place; DataError when a table is
//      left empty (and as KnowledgeLoader::filter_triples throws).
void filter_knowledge(DatasetTables& tables, KnowledgeLoader& knowledge,
                      const DatasetOptions& options, const Vocabulary& item_vocab);

// in:  the remapped tables (id_remap.h).
// out: every column of the item id space (the item id columns and the item aliases) renumbered
//      in the graph's item order, with a new vocabulary; the knowledge graph built in that order.
KnowledgeGraph merge_items_and_entities(DatasetTables& tables, KnowledgeLoader& knowledge,
                                        const DatasetOptions& options);

}  // namespace recbole::data

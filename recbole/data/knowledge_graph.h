#pragma once
// The knowledge graph of a knowledge-aware run: the triples of <dataset>.kg and the item →
// entity link of <dataset>.link, in RecBole's id spaces (its KnowledgeBasedDataset).
//
// Ids after loading (every space has the padding id 0):
//   entities  0 pad, 1..n_items-1 the items (entity i IS item i: linked items take their item's
//             id, unlinked items are "virtual" entities without triples), then the entities that
//             are not items, in order of first appearance over the heads column, then the tails
//             column;
//   relations 0 pad, 1..R0 by first appearance, R0+1..2·R0 the reverses (kg_reverse_r),
//             then "[UI-Relation]" last (it labels user–item edges; no triple carries it).
// Triples are stored once, as int32 columns in file order (reversed triples appended after the
// originals); models gather from them, nothing is copied per batch.
//
// How loading goes (Dataset::load drives it, knowledge_graph.cpp does it), as RecBole:
//   read .kg (load_col.kg) and .link (load_col.link) -> after the generic filters: the
//   triple-count filter (entity_kg_num_interval, relation_kg_num_interval, to a fixed point),
//   the link filter (pairs whose item or entity is gone), the interactions of unlinked items
//   dropped -> after the generic remap: items re-ordered (pad, unlinked, linked), entities
//   merged into the item space, relations numbered.
// Deliberate difference: a link that is not one-to-one (an item linked to two entities, or an
// entity to two items) is a DataError naming the rows; RecBole crashes or mislinks (#1755).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recbole/data/table.h"

namespace recbole::data {

// The knowledge keys of the config.
struct KnowledgeOptions {
  std::string head_field = "head_id";          // HEAD_ENTITY_ID_FIELD
  std::string relation_field = "relation_id";  // RELATION_ID_FIELD
  std::string tail_field = "tail_id";          // TAIL_ENTITY_ID_FIELD
  std::string entity_field = "entity_id";      // ENTITY_ID_FIELD (the .link column)
  bool reverse_relations = false;              // kg_reverse_r
  std::string entity_interval = "[0,inf)";     // entity_kg_num_interval; "" = no filter
  std::string relation_interval = "[0,inf)";   // relation_kg_num_interval; "" = no filter
};

class KnowledgeGraph {
 public:
  // What a model that needs it is told it lacks (models::ModelContext::need).
  static constexpr const char* kPart =
      "the knowledge graph that the knowledge task loads (<dataset>.kg and .link)";
  int64_t n_entities() const { return static_cast<int64_t>(entity_tokens_.size()); }
  int64_t n_relations() const { return static_cast<int64_t>(relation_tokens_.size()); }
  int64_t n_triples() const { return static_cast<int64_t>(heads_.size()); }
  // The relation id of user–item edges ([UI-Relation], the last id).
  int32_t ui_relation() const { return static_cast<int32_t>(relation_tokens_.size()) - 1; }
  // Items with a link to a KG entity.
  int64_t n_linked_items() const { return n_linked_; }

  // [n_triples] int32 columns: heads/tails in [1, n_entities), relations in [1, ui_relation()).
  const std::vector<int32_t>& heads() const { return heads_; }
  const std::vector<int32_t>& relations() const { return relations_; }
  const std::vector<int32_t>& tails() const { return tails_; }

  // The token of an id (a linked item's entity token; a virtual entity's is its item's token;
  // a reverse relation's is the relation's token + "_r").
  const std::string& entity_token(int32_t id) const {
    return entity_tokens_[static_cast<size_t>(id)];
  }
  const std::string& relation_token(int32_t id) const {
    return relation_tokens_[static_cast<size_t>(id)];
  }
  // The lines of the dataset summary ("The number of entities: ...").
  std::string summary() const;

  // A graph given by its ids (tests, synthetic data): entities 0..n_entities-1 with tokens
  // "0", "1", ..., relations 1..n_kg_relations plus [UI-Relation]; the first n_items entities
  // are the items, of which n_linked carry triples.
  static KnowledgeGraph from_ids(int64_t n_entities, int64_t n_kg_relations, int64_t n_linked,
                                 std::vector<int32_t> heads, std::vector<int32_t> relations,
                                 std::vector<int32_t> tails);

 private:
  friend class KnowledgeLoader;
  std::vector<int32_t> heads_, relations_, tails_;
  std::vector<std::string> entity_tokens_, relation_tokens_;
  int64_t n_linked_ = 0;
};

// Loads and links the knowledge graph beside the dataset's tables (used by Dataset::load).
class KnowledgeLoader {
 public:
  // Reads <dir>/<name>.kg and .link with their load_col columns (kg_columns / link_columns;
  // empty = every column). Throws DataError: a file missing, a head/relation/tail or
  // item/entity column missing or not a token, a malformed line, a link that is not
  // one-to-one; ConfigError for a bad interval.
  KnowledgeLoader(const std::string& dir, const std::string& name, const std::string& iid_field,
                  const KnowledgeOptions& options, const std::vector<std::string>& kg_columns,
                  const std::vector<std::string>& link_columns, const std::string& field_separator);

  // The triple-count filter, to a fixed point. DataError (naming the keys) when no triple is
  // left.
  void filter_triples();
  // The link filter: keeps the link pairs whose item token occurs in `items` (every item-id
  // column left after filtering) and whose entity is in the KG; returns whether each item id
  // of `vocab` (provisional ids, before remapping) is linked.
  std::vector<uint8_t> linked_items(const std::vector<const Column*>& items,
                                    const Vocabulary& vocab);

  // After the generic remap. `items` holds the remapped item vocabulary (id → token); returns
  // the new id of every remapped item id (pad, unlinked items, then linked items, each in id
  // order) and builds the graph in that order.
  std::vector<int32_t> item_order(const Vocabulary& items);
  KnowledgeGraph build();

  int64_t bytes_read() const { return bytes_read_; }

 private:
  std::string kg_path_, link_path_;
  KnowledgeOptions options_;
  std::string iid_field_;
  Table kg_, link_;
  int64_t bytes_read_ = 0;
  // After item_order: the new item id of each link row (-1 = dropped), and the item tokens in
  // the new order.
  std::vector<int32_t> link_item_;
  std::vector<std::string> item_tokens_;
};

}  // namespace recbole::data

#pragma once
// IdAliases: the alias fields of Dataset::load (alias_of_user_id, alias_of_item_id,
// alias_of_entity_id, alias_of_relation_id; the rules are in dataset.h), through the stages of
// the load:
//   before reading    each alias field is given the vocabulary it interns into while parsing
//                     (user / item aliases: their id field's, so that one remap covers both;
//                     entity / relation aliases: one vocabulary per group)
//   after reading     every alias must be a loaded token or token_seq column
//   remap             user / item aliases are remapped with their id field (id_remap.h); the
//                     other aliases are left to the knowledge graph
//   after the merge   entity / relation alias tokens become the knowledge graph's ids
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/knowledge_graph.h"

namespace recbole::data {

class IdAliases {
 public:
  // Checks that each alias field joins one id space (not an id field, a knowledge graph field or
  // a field of another alias list; RecBole asserts the groups are disjoint) and that entity /
  // relation aliases come with a knowledge graph: ConfigError naming the key otherwise. Adds
  // each alias field's vocabulary to `vocabularies`, which must hold the user and item id
  // fields' already. `options` must outlive this object.
  IdAliases(const DatasetOptions& options, Vocabularies& vocabularies);

  // After reading: every alias names a loaded token column of the .inter, .user or .item file
  // (ConfigError naming the key otherwise).
  void check_columns(const DatasetTables& tables) const;

  // Whether `field` is listed in one of the four alias keys.
  bool is_alias(const std::string& field) const;

  // After the items and the graph's entities are merged (knowledge_link.h): the entity
  // (relation) alias columns take the graph's entity (relation) ids, tokens the filtered graph
  // lacks the padding id 0, with a warning. n_items: the item ids, padding included.
  void remap_into_knowledge_graph(DatasetTables& tables, const KnowledgeGraph& graph,
                                  int64_t n_items) const;

 private:
  // The alias groups: key, fields, and the vocabulary their tokens intern into while parsing
  // (null: their id field's).
  struct Group {
    const char* key;
    const std::vector<std::string>* fields;
    std::shared_ptr<Vocabulary> vocab;
  };
  std::vector<Group> groups() const;

  const DatasetOptions& options_;
  // The vocabularies the entity / relation alias fields intern into while parsing.
  std::shared_ptr<Vocabulary> entity_aliases_, relation_aliases_;
};

}  // namespace recbole::data

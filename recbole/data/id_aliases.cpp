#include "recbole/data/id_aliases.h"

#include <algorithm>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::data {

namespace {

// The entity (relation) alias columns, in RecBole's order: fields as listed, each over the
// .inter, .user and .item tables.
std::vector<Column*> alias_columns(DatasetTables& tables, const std::vector<std::string>& fields) {
  std::vector<Column*> out;
  for (const std::string& a : fields)
    for (Table* t : tables.all())
      if (t->has(a)) out.push_back(&t->column(a));
  return out;
}

// Entity (relation) alias tokens become the graph's ids. `first` is the first id an alias token
// may take (entity ids below it are unlinked items, whose "entity" is only their item token),
// `end` one past the last.
void remap_kg_alias(DatasetTables& tables, const std::vector<std::string>& fields, const char* key,
                    const std::vector<std::string>& tokens, int32_t first, int32_t end) {
  std::vector<Column*> cols = alias_columns(tables, fields);
  if (cols.empty()) return;
  Vocabulary lookup;
  std::vector<int32_t> id_of;
  for (int32_t i = first; i < end; ++i) {
    const int32_t k = lookup.intern(tokens[size_t(i)]);
    if (k == static_cast<int32_t>(id_of.size())) id_of.push_back(i);
  }
  auto vocab = std::make_shared<Vocabulary>();
  for (const std::string& t : tokens) vocab->append(t);
  int64_t unknown = 0;
  std::string example;
  for (Column* c : cols) {
    for (int32_t& v : c->tokens) {
      if (v < 0) {
        v = 0;
        continue;
      }
      const int32_t k = lookup.find(c->vocab->token(v));
      if (k < 0) {
        ++unknown;
        if (example.empty()) example = c->vocab->token(v);
      }
      v = k < 0 ? 0 : id_of[size_t(k)];
    }
    c->vocab = vocab;
  }
  if (unknown > 0)
    log::warning(std::string(key) + ": " + std::to_string(unknown) + " values (e.g. \"" + example +
                 "\") are not in the knowledge graph after " +
                 "its filters; they are set to the padding id 0");
}

}  // namespace

std::vector<IdAliases::Group> IdAliases::groups() const {
  return {{"alias_of_user_id", &options_.user_aliases, nullptr},
          {"alias_of_item_id", &options_.item_aliases, nullptr},
          {"alias_of_entity_id", &options_.entity_aliases, entity_aliases_},
          {"alias_of_relation_id", &options_.relation_aliases, relation_aliases_}};
}

IdAliases::IdAliases(const DatasetOptions& options, Vocabularies& vocabularies)
    : options_(options) {
  const KnowledgeOptions& kg = options_.kg;
  std::vector<std::string> taken{options_.uid_field, options_.iid_field};
  if (options_.knowledge())
    taken.insert(taken.end(), {kg.head_field, kg.tail_field, kg.relation_field});
  for (const std::vector<std::string>* kg_aliases :
       {&options_.entity_aliases, &options_.relation_aliases})
    if (!kg_aliases->empty() && !options_.knowledge())
      throw ConfigError(std::string(kg_aliases == &options_.entity_aliases
                                        ? "alias_of_entity_id"
                                        : "alias_of_relation_id") +
                        ": names fields of the knowledge graph's ids, but no knowledge graph "
                        "is loaded (load_col has no kg entry); expected null, or a knowledge "
                        "model");
  entity_aliases_ = std::make_shared<Vocabulary>();
  relation_aliases_ = std::make_shared<Vocabulary>();
  for (const Group& g : groups())
    for (const std::string& a : *g.fields) {
      if (std::find(taken.begin(), taken.end(), a) != taken.end())
        throw ConfigError(std::string(g.key) + ": \"" + a +
                          "\" is an id field, a knowledge graph field or already listed in an "
                          "alias list; expected other token fields, each in one alias list");
      taken.push_back(a);
      vocabularies[a] = g.vocab
                            ? g.vocab
                            : vocabularies[g.fields == &options_.user_aliases ? options_.uid_field
                                                                              : options_.iid_field];
    }
}

void IdAliases::check_columns(const DatasetTables& tables) const {
  for (const Group& g : groups())
    for (const std::string& a : *g.fields) {
      const std::string key = g.key;
      bool found = false;
      for (const Table* t : tables.all())
        if (t->has(a)) {
          found = true;
          if (!t->column(a).is_token_like())
            throw ConfigError(key + ": " + t->source() + ": column " + a + " is of type " +
                              field_type_name(t->column(a).type) +
                              "; expected a token or token_seq field");
        }
      if (!found)
        throw ConfigError(key + ": no loaded column \"" + a +
                          "\" in the .inter, .user or .item file (check load_col)");
    }
}

bool IdAliases::is_alias(const std::string& field) const {
  for (const Group& g : groups())
    if (std::find(g.fields->begin(), g.fields->end(), field) != g.fields->end()) return true;
  return false;
}

void IdAliases::remap_into_knowledge_graph(DatasetTables& tables, const KnowledgeGraph& graph,
                                           int64_t n_items) const {
  const KnowledgeGraph& g = graph;
  std::vector<std::string> entities, relations;
  for (int32_t i = 0; i < g.n_entities(); ++i) entities.push_back(g.entity_token(i));
  for (int32_t i = 0; i < g.n_relations(); ++i) relations.push_back(g.relation_token(i));
  // Linked items and the KG's own entities; relations of the file (not the reverses, nor
  // [UI-Relation]: RecBole remaps the aliases before adding those).
  const int32_t linked = static_cast<int32_t>(n_items - g.n_linked_items());
  const int32_t n_rel = static_cast<int32_t>(
      options_.kg.reverse_relations ? (g.n_relations() - 2) / 2 + 1 : g.n_relations() - 1);
  remap_kg_alias(tables, options_.entity_aliases, "alias_of_entity_id", entities, linked,
                 static_cast<int32_t>(g.n_entities()));
  remap_kg_alias(tables, options_.relation_aliases, "alias_of_relation_id", relations, 1, n_rel);
}

}  // namespace recbole::data

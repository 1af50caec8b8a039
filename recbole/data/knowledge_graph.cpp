#include "recbole/data/knowledge_graph.h"

#include <filesystem>
#include <map>
#include <optional>

#include "recbole/data/atomic_file.h"
#include "recbole/data/interval.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::data {
namespace {

std::string column_list(const Table& t) {
  std::string s;
  for (const Column& c : t.columns()) s += (s.empty() ? "" : ", ") + c.header();
  return s;
}

// A token column `field` of `t`, with no empty cell; `key` names the config key of the field.
const std::vector<int32_t>& token_column(const Table& t, const std::string& field,
                                         const std::string& key) {
  if (!t.has(field))
    throw DataError(t.source() + ": column " + field + " (" + key +
                    ") is not loaded; loaded columns: " + column_list(t) +
                    " (check the header, load_col and " + key + ")");
  const Column& c = t.column(field);
  if (c.type != FieldType::kToken)
    throw DataError(t.source() + ":1: column " + field + " (" + key +
                    ") must be of type token, got " + field_type_name(c.type));
  for (size_t r = 0; r < c.tokens.size(); ++r)
    if (c.tokens[r] < 0)
      throw DataError(t.source() + ": data row " + std::to_string(r + 1) + " has no " + field +
                      " (an empty cell); expected a token in every row");
  return c.tokens;
}

Table read_file(const std::string& path, const std::string& what,
                const std::vector<std::string>& columns, const std::string& separator,
                std::map<std::string, std::shared_ptr<Vocabulary>>& vocabularies) {
  namespace fs = std::filesystem;
  if (!fs::is_regular_file(path))
    throw DataError(path + ": file not found (" + what +
                    "; knowledge models read <dataset>.kg and <dataset>.link, set by load_col.kg "
                    "and load_col.link)");
  AtomicFileOptions fo;
  fo.field_separator = separator;
  if (!columns.empty() && !(columns.size() == 1 && columns[0] == "*")) fo.load_col = columns;
  fo.vocabularies = &vocabularies;
  return read_atomic_file(path, fo);
}

}  // namespace

std::string KnowledgeGraph::summary() const {
  return "The number of entities: " + std::to_string(n_entities()) +
         "\nThe number of relations: " + std::to_string(n_relations()) +
         "\nThe number of triples: " + std::to_string(n_triples()) +
         "\nThe number of items that have been linked to KG: " + std::to_string(n_linked_);
}

KnowledgeGraph KnowledgeGraph::from_ids(int64_t n_entities, int64_t n_kg_relations,
                                        int64_t n_linked, std::vector<int32_t> heads,
                                        std::vector<int32_t> relations,
                                        std::vector<int32_t> tails) {
  KnowledgeGraph g;
  g.entity_tokens_.push_back("[PAD]");
  for (int64_t e = 1; e < n_entities; ++e) g.entity_tokens_.push_back(std::to_string(e));
  g.relation_tokens_.push_back("[PAD]");
  for (int64_t r = 1; r <= n_kg_relations; ++r)
    g.relation_tokens_.push_back("r" + std::to_string(r));
  g.relation_tokens_.push_back("[UI-Relation]");
  g.heads_ = std::move(heads);
  g.relations_ = std::move(relations);
  g.tails_ = std::move(tails);
  g.n_linked_ = n_linked;
  return g;
}

KnowledgeLoader::KnowledgeLoader(const std::string& dir, const std::string& name,
                                 const std::string& iid_field, const KnowledgeOptions& options,
                                 const std::vector<std::string>& kg_columns,
                                 const std::vector<std::string>& link_columns,
                                 const std::string& field_separator)
    : options_(options), iid_field_(iid_field) {
  namespace fs = std::filesystem;
  kg_path_ = (fs::path(dir) / (name + ".kg")).string();
  link_path_ = (fs::path(dir) / (name + ".link")).string();
  // Heads and tails are one id space; the relation column has its own.
  std::map<std::string, std::shared_ptr<Vocabulary>> kg_vocab;
  auto entities = std::make_shared<Vocabulary>();
  kg_vocab[options.head_field] = entities;
  kg_vocab[options.tail_field] = entities;
  kg_ = read_file(kg_path_, "the knowledge graph of dataset " + name, kg_columns, field_separator,
                  kg_vocab);
  bytes_read_ += static_cast<int64_t>(fs::file_size(kg_path_));
  token_column(kg_, options.head_field, "HEAD_ENTITY_ID_FIELD");
  token_column(kg_, options.relation_field, "RELATION_ID_FIELD");
  token_column(kg_, options.tail_field, "TAIL_ENTITY_ID_FIELD");
  if (kg_.n_rows() == 0) throw DataError(kg_path_ + ": no triples (the file has a header only)");

  std::map<std::string, std::shared_ptr<Vocabulary>> link_vocab;
  link_ = read_file(link_path_, "the item-entity link of dataset " + name, link_columns,
                    field_separator, link_vocab);
  bytes_read_ += static_cast<int64_t>(fs::file_size(link_path_));
  const std::vector<int32_t>& items = token_column(link_, iid_field, "ITEM_ID_FIELD");
  const std::vector<int32_t>& ents = token_column(link_, options.entity_field, "ENTITY_ID_FIELD");
  // One-to-one: RecBole keeps the last pair of an item in one dict and of an entity in another,
  // and its id merge then assumes both agree (#1755). A repeated identical pair is harmless.
  const Column& item_col = link_.column(iid_field);
  const Column& ent_col = link_.column(options.entity_field);
  std::vector<int64_t> item_row(static_cast<size_t>(item_col.vocab->size()), -1);
  std::vector<int64_t> ent_row(static_cast<size_t>(ent_col.vocab->size()), -1);
  std::vector<uint8_t> keep(items.size(), 1);
  for (size_t r = 0; r < items.size(); ++r) {
    int64_t& ir = item_row[static_cast<size_t>(items[r])];
    int64_t& er = ent_row[static_cast<size_t>(ents[r])];
    if (ir >= 0 && ents[static_cast<size_t>(ir)] == ents[r]) {
      keep[r] = 0;  // the same pair again
      continue;
    }
    auto row = [](int64_t x) { return "data row " + std::to_string(x + 1); };
    if (ir >= 0)
      throw DataError(link_path_ + ": item " + item_col.vocab->token(items[r]) +
                      " is linked to entity " + ent_col.vocab->token(ents[size_t(ir)]) + " (" +
                      row(ir) + ") and to entity " + ent_col.vocab->token(ents[r]) + " (" +
                      row(int64_t(r)) + "); expected one entity per item (a one-to-one link)");
    if (er >= 0)
      throw DataError(link_path_ + ": entity " + ent_col.vocab->token(ents[r]) +
                      " is linked to item " + item_col.vocab->token(items[size_t(er)]) + " (" +
                      row(er) + ") and to item " + item_col.vocab->token(items[r]) + " (" +
                      row(int64_t(r)) + "); expected one item per entity (a one-to-one link)");
    ir = er = static_cast<int64_t>(r);
  }
  link_.filter(keep);
  // Both intervals are parsed now, so that a bad one fails before any work.
  for (const auto& [text, key] :
       {std::pair{&options.entity_interval, "entity_kg_num_interval"},
        std::pair{&options.relation_interval, "relation_kg_num_interval"}})
    if (!text->empty()) parse_intervals(*text, key);
}

void KnowledgeLoader::filter_triples() {
  std::optional<IntervalSet> ent_iv, rel_iv;
  if (!options_.entity_interval.empty())
    ent_iv = parse_intervals(options_.entity_interval, "entity_kg_num_interval");
  if (!options_.relation_interval.empty())
    rel_iv = parse_intervals(options_.relation_interval, "relation_kg_num_interval");
  if (!ent_iv && !rel_iv) return;
  const Column& head = kg_.column(options_.head_field);
  const Column& rel = kg_.column(options_.relation_field);
  std::vector<int64_t> ent_count(static_cast<size_t>(head.vocab->size()), 0);
  std::vector<int64_t> rel_count(static_cast<size_t>(rel.vocab->size()), 0);
  auto count = [&](int64_t sign) {
    const auto& h = kg_.column(options_.head_field).tokens;
    const auto& t = kg_.column(options_.tail_field).tokens;
    const auto& r = kg_.column(options_.relation_field).tokens;
    for (size_t k = 0; k < h.size(); ++k) {
      ent_count[size_t(h[k])] += sign;
      ent_count[size_t(t[k])] += sign;
      rel_count[size_t(r[k])] += sign;
    }
  };
  count(1);
  for (;;) {
    const auto& h = kg_.column(options_.head_field).tokens;
    const auto& t = kg_.column(options_.tail_field).tokens;
    const auto& r = kg_.column(options_.relation_field).tokens;
    std::vector<uint8_t> keep(h.size(), 1);
    int64_t dropped = 0;
    for (size_t k = 0; k < h.size(); ++k) {
      const bool ok = (!ent_iv || (ent_iv->contains(double(ent_count[size_t(h[k])])) &&
                                   ent_iv->contains(double(ent_count[size_t(t[k])])))) &&
                      (!rel_iv || rel_iv->contains(double(rel_count[size_t(r[k])])));
      keep[k] = ok;
      dropped += ok ? 0 : 1;
    }
    if (dropped == 0) break;
    count(-1);
    kg_.filter(keep);
    count(1);
  }
  if (kg_.n_rows() == 0)
    throw DataError(kg_path_ + ": no triple left after the filter entity_kg_num_interval = \"" +
                    options_.entity_interval + "\", relation_kg_num_interval = \"" +
                    options_.relation_interval + "\"; expected intervals that keep some triples");
}

std::vector<uint8_t> KnowledgeLoader::linked_items(const std::vector<const Column*>& items,
                                                   const Vocabulary& vocab) {
  std::vector<uint8_t> present(static_cast<size_t>(vocab.size()), 0);
  for (const Column* c : items)
    for (int32_t v : c->tokens)
      if (v >= 0) present[size_t(v)] = 1;
  const Column& head = kg_.column(options_.head_field);
  std::vector<uint8_t> in_kg(static_cast<size_t>(head.vocab->size()), 0);
  for (const std::string* f : {&options_.head_field, &options_.tail_field})
    for (int32_t v : kg_.column(*f).tokens) in_kg[size_t(v)] = 1;

  const Column& item_col = link_.column(iid_field_);
  const Column& ent_col = link_.column(options_.entity_field);
  std::vector<uint8_t> keep(static_cast<size_t>(link_.n_rows()), 0), linked(present.size(), 0);
  for (size_t r = 0; r < keep.size(); ++r) {
    const int32_t item = vocab.find(item_col.vocab->token(item_col.tokens[r]));
    const int32_t ent = head.vocab->find(ent_col.vocab->token(ent_col.tokens[r]));
    keep[r] = item >= 0 && present[size_t(item)] && ent >= 0 && in_kg[size_t(ent)];
    if (keep[r]) linked[size_t(item)] = 1;
  }
  link_.filter(keep);
  return linked;
}

std::vector<int32_t> KnowledgeLoader::item_order(const Vocabulary& items) {
  const Column& head = kg_.column(options_.head_field);
  const Column& ent_col = link_.column(options_.entity_field);
  const Column& item_col = link_.column(iid_field_);
  // The link rows that name a remapped item and a KG entity (all of them after the link
  // filter; with benchmark files the filters do not run, as in RecBole).
  std::vector<int32_t> item_of_row(static_cast<size_t>(link_.n_rows()), -1);
  std::vector<uint8_t> linked(static_cast<size_t>(items.size()), 0);
  for (size_t r = 0; r < item_of_row.size(); ++r) {
    const int32_t item = items.find(item_col.vocab->token(item_col.tokens[r]));
    const int32_t ent = head.vocab->find(ent_col.vocab->token(ent_col.tokens[r]));
    if (item <= 0 || ent < 0) continue;
    item_of_row[r] = item;
    linked[size_t(item)] = 1;
  }
  // [PAD], the unlinked items, then the linked ones, each in id order (a stable sort).
  std::vector<int32_t> new_id(static_cast<size_t>(items.size()), 0);
  item_tokens_.assign(1, items.token(0));
  for (int pass = 0; pass < 2; ++pass)
    for (int32_t i = 1; i < items.size(); ++i)
      if (linked[size_t(i)] == pass) {
        new_id[size_t(i)] = static_cast<int32_t>(item_tokens_.size());
        item_tokens_.push_back(items.token(i));
      }
  link_item_.assign(item_of_row.size(), -1);
  for (size_t r = 0; r < item_of_row.size(); ++r)
    if (item_of_row[r] > 0) link_item_[r] = new_id[size_t(item_of_row[r])];
  return new_id;
}

KnowledgeGraph KnowledgeLoader::build() {
  KnowledgeGraph g;
  const Column& head = kg_.column(options_.head_field);
  const Vocabulary& ents = *head.vocab;
  // Linked entities take their item's id.
  std::vector<int32_t> ent_id(static_cast<size_t>(ents.size()), -1);
  const Column& ent_col = link_.column(options_.entity_field);
  for (size_t r = 0; r < link_item_.size(); ++r) {
    if (link_item_[r] < 0) continue;
    ent_id[size_t(ents.find(ent_col.vocab->token(ent_col.tokens[r])))] = link_item_[r];
    ++g.n_linked_;
  }
  // Items without a link are virtual entities named by their item token; the others follow
  // the items, by first appearance over the heads, then the tails.
  g.entity_tokens_ = item_tokens_;
  for (size_t r = 0; r < link_item_.size(); ++r)
    if (link_item_[r] >= 0)
      g.entity_tokens_[size_t(link_item_[r])] = ent_col.vocab->token(ent_col.tokens[r]);
  for (const std::string* f : {&options_.head_field, &options_.tail_field})
    for (int32_t v : kg_.column(*f).tokens)
      if (ent_id[size_t(v)] < 0) {
        ent_id[size_t(v)] = static_cast<int32_t>(g.entity_tokens_.size());
        g.entity_tokens_.push_back(ents.token(v));
      }
  const auto& h = kg_.column(options_.head_field).tokens;
  const auto& t = kg_.column(options_.tail_field).tokens;
  const Column& rel = kg_.column(options_.relation_field);
  std::vector<int32_t> rel_id(static_cast<size_t>(rel.vocab->size()), -1);
  g.relation_tokens_.assign(1, "[PAD]");
  const size_t n = h.size();
  g.heads_.resize(n);
  g.tails_.resize(n);
  g.relations_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    int32_t& r = rel_id[size_t(rel.tokens[k])];
    if (r < 0) {
      r = static_cast<int32_t>(g.relation_tokens_.size());
      g.relation_tokens_.push_back(rel.vocab->token(rel.tokens[k]));
    }
    g.heads_[k] = ent_id[size_t(h[k])];
    g.tails_[k] = ent_id[size_t(t[k])];
    g.relations_[k] = r;
  }
  if (options_.reverse_relations) {
    const int32_t r0 = static_cast<int32_t>(g.relation_tokens_.size()) - 1;
    for (int32_t r = 1; r <= r0; ++r)
      g.relation_tokens_.push_back(g.relation_tokens_[size_t(r)] + "_r");
    for (size_t k = 0; k < n; ++k) {
      g.heads_.push_back(g.tails_[k]);
      g.tails_.push_back(g.heads_[k]);
      g.relations_.push_back(g.relations_[k] + r0);
    }
  }
  g.relation_tokens_.push_back("[UI-Relation]");
  log::debug(kg_path_ + ": " + std::to_string(g.n_triples()) + " triples, " +
             std::to_string(g.n_entities()) + " entities, " + std::to_string(g.n_relations()) +
             " relations");
  return g;
}

}  // namespace recbole::data

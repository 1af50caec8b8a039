#include "recbole/data/id_remap.h"

#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "recbole/utils/logging.h"

namespace recbole::data {

namespace {

// Remaps the token columns of one id space together, by first appearance in column order.
std::shared_ptr<Vocabulary> remap_space(const std::vector<Column*>& columns) {
  const Vocabulary& old_vocab = *columns.front()->vocab;
  std::vector<int32_t> mapping(static_cast<size_t>(old_vocab.size()), -1);
  auto vocab = std::make_shared<Vocabulary>();
  vocab->append("[PAD]");
  for (Column* c : columns) {
    for (int32_t& v : c->tokens) {
      if (v < 0) {
        v = 0;  // a missing token becomes the padding id (pandas.factorize's -1, plus one)
        continue;
      }
      int32_t& m = mapping[static_cast<size_t>(v)];
      if (m < 0) m = vocab->append(old_vocab.token(v));
      v = m;
    }
  }
  for (Column* c : columns) c->vocab = vocab;
  return vocab;
}

}  // namespace

IdCounts remap_token_fields(DatasetTables& tables, const DatasetOptions& opt,
                            const IdAliases& aliases) {
  // An id space: the .inter column, the feature file's, then the alias fields in listed order.
  auto space = [&](const std::string& field, std::optional<Table>& feat,
                   const std::vector<std::string>& alias_fields) {
    std::vector<Column*> cols{&tables.inter.column(field)};
    if (feat) cols.push_back(&feat->column(field));
    for (const std::string& a : alias_fields)
      for (Table* t : tables.all())
        if (t->has(a)) cols.push_back(&t->column(a));
    return remap_space(cols)->size();
  };
  IdCounts ids;
  ids.n_users = space(opt.uid_field, tables.user, opt.user_aliases);
  ids.n_items = space(opt.iid_field, tables.item, opt.item_aliases);
  // Entity and relation aliases keep their parsing ids until the KG merge maps them.
  // Every other token field is its own id space.
  for (Table* t : tables.all()) {
    for (Column& c : t->columns()) {
      if (!c.is_token_like() || c.name == opt.uid_field || c.name == opt.iid_field ||
          aliases.is_alias(c.name))
        continue;
      remap_space({&c});
    }
  }
  return ids;
}

std::vector<const std::vector<uint8_t>*> FeatureRowsFromFile::per_table(
    const DatasetTables& tables) const {
  std::vector<const std::vector<uint8_t>*> out{nullptr};
  if (tables.user) out.push_back(&user);
  if (tables.item) out.push_back(&item);
  return out;
}

FeatureRowsFromFile reindex_feature_tables(DatasetTables& tables, const DatasetOptions& opt,
                                           const IdCounts& ids) {
  auto reindex = [](Table& t, const std::string& field, int64_t n,
                    std::vector<uint8_t>& from_file) {
    std::vector<int64_t> rows(static_cast<size_t>(n), -1);
    const std::vector<int32_t>& ids = t.column(field).tokens;
    int64_t duplicates = 0;
    for (size_t r = 0; r < ids.size(); ++r) {
      int64_t& slot = rows[static_cast<size_t>(ids[r])];
      if (slot < 0) {
        slot = static_cast<int64_t>(r);
      } else {
        ++duplicates;
      }
    }
    if (duplicates > 0) {
      log::warning(t.source() + ": " + std::to_string(duplicates) + " rows repeat an id; the " +
                   "first row of each id is kept");
    }
    t.take(rows);
    std::vector<int32_t>& out = t.column(field).tokens;
    std::iota(out.begin(), out.end(), 0);
    from_file.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) from_file[i] = rows[i] >= 0;
  };
  FeatureRowsFromFile from_file;
  if (tables.user) reindex(*tables.user, opt.uid_field, ids.n_users, from_file.user);
  if (tables.item) reindex(*tables.item, opt.iid_field, ids.n_items, from_file.item);
  return from_file;
}

}  // namespace recbole::data

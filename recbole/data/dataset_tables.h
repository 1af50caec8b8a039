#pragma once
// DatasetTables: the tables of a dataset while Dataset::load's stages work on them (see
// dataset_loader.h): the interactions, and the .user / .item tables when loaded, always in
// RecBole's order (.inter, .user, .item). Before remapping, token ids are the provisional ids of
// the parse vocabularies (table.h); after it, 0 is the padding id.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recbole/data/table.h"

namespace recbole::data {

// The vocabularies the atomic files intern their token columns into while parsing, by field name
// (AtomicFileOptions::vocabularies): a column's vocab is the one here, so that the parts of a
// benchmark split, a feature file and the id aliases share one id space per field.
using Vocabularies = std::map<std::string, std::shared_ptr<Vocabulary>>;

struct DatasetTables {
  Table inter;
  std::optional<Table> user, item;

  // inter, then user and item where loaded.
  std::vector<Table*> all();
  std::vector<const Table*> all() const;

  // RecBole raises when a filter leaves a table empty: DataError naming the table and `step`.
  void check_not_empty(const std::string& step);
};

// The column names of `t`, in order (for messages).
std::vector<std::string> column_names(const Table& t);
// "name:type" of each column, for messages where the types matter.
std::vector<std::string> column_headers(const Table& t);

}  // namespace recbole::data

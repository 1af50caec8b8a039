#include "recbole/data/dataset_tables.h"

#include "recbole/utils/error.h"

namespace recbole::data {

std::vector<Table*> DatasetTables::all() {
  std::vector<Table*> out{&inter};
  if (user) out.push_back(&*user);
  if (item) out.push_back(&*item);
  return out;
}

std::vector<const Table*> DatasetTables::all() const {
  std::vector<const Table*> out{&inter};
  if (user) out.push_back(&*user);
  if (item) out.push_back(&*item);
  return out;
}

void DatasetTables::check_not_empty(const std::string& step) {
  for (Table* t : all()) {
    if (t->n_rows() == 0) {
      throw DataError(t->source() + ": no rows left after " + step +
                      "; every row of this file was filtered away (check the filter settings)");
    }
  }
}

std::vector<std::string> column_names(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns()) out.push_back(c.name);
  return out;
}

std::vector<std::string> column_headers(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns()) out.push_back(c.header());
  return out;
}

}  // namespace recbole::data

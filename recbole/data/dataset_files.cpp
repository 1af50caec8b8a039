#include "recbole/data/dataset_files.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "recbole/data/atomic_file.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::data {

namespace {

std::string file_path(const DatasetOptions& opt, const std::string& suffix) {
  return (std::filesystem::path(opt.dataset_dir()) / (opt.dataset + "." + suffix)).string();
}

// Column selection of one file kind; false when the file is not to be loaded at all.
bool selection(const DatasetOptions& opt, Vocabularies& vocabularies, const std::string& suffix,
               AtomicFileOptions& fo) {
  fo.field_separator = opt.field_separator;
  fo.seq_separator = opt.seq_separator;
  fo.vocabularies = &vocabularies;
  if (opt.load_col) {
    auto it = opt.load_col->find(suffix);
    if (it == opt.load_col->end()) return false;
    if (!(it->second.size() == 1 && it->second[0] == "*")) fo.load_col = it->second;
  }
  auto un = opt.unload_col.find(suffix);
  if (un != opt.unload_col.end()) {
    fo.unload_col = un->second;
    if (fo.load_col && !fo.load_col->empty() && !fo.unload_col.empty()) {
      throw ConfigError("load_col and unload_col: both list columns of the ." + suffix +
                        " file; set only one of them");
    }
  }
  return true;
}

void require_token_field(const Table& t, const std::string& field, const std::string& why) {
  const int i = t.index_of(field);
  if (i < 0) {
    throw DataError(t.source() + ": column " + field + " (" + why +
                    ") is not loaded; loaded columns: " + join(column_names(t), ", ") +
                    " (check load_col/unload_col and the header)");
  }
  if (t.columns()[static_cast<size_t>(i)].type != FieldType::kToken) {
    throw DataError(t.source() + ":1: column " + field + " (" + why + ") must be of type token, " +
                    "got " + field_type_name(t.columns()[static_cast<size_t>(i)].type));
  }
}

// unused_col.inter names columns kept for filtering but left out of the split written and
// trained on: the id fields cannot be among them (the split would have no items), and a name
// that is not a loaded column is a typo, not a no-op.
void check_unused_columns(const DatasetOptions& opt, const Table& inter) {
  const auto it = opt.unused_col.find("inter");
  if (it == opt.unused_col.end()) return;
  for (const std::string& name : it->second) {
    if (name == opt.uid_field || name == opt.iid_field)
      throw ConfigError("unused_col: inter: \"" + name +
                        "\" is an id field (USER_ID_FIELD / ITEM_ID_FIELD); expected other "
                        "columns");
    if (!inter.has(name))
      throw ConfigError("unused_col: inter: no column \"" + name + "\" in " + inter.source() +
                        " (loaded: " + join(column_names(inter), ", ") + ")");
  }
}

}  // namespace

DatasetFiles read_dataset_files(const DatasetOptions& opt, Vocabularies& vocabularies) {
  namespace fs = std::filesystem;
  DatasetFiles out;
  DatasetTables& tables = out.tables;

  AtomicFileOptions fo;
  if (!selection(opt, vocabularies, "inter", fo)) {
    throw ConfigError("load_col: has no \"inter\" entry, but the interactions must be loaded");
  }
  if (opt.benchmark_filename.empty()) {
    const std::string path = file_path(opt, "inter");
    if (!fs::is_regular_file(path)) {
      const std::string what =
          "the .inter file of dataset " + opt.dataset + " under data_path " + opt.data_path;
      if (fs::exists(path))
        throw DataError(path + ": is " +
                        (fs::is_directory(path) ? "a directory" : "not a regular file") +
                        ", expected " + what);
      throw DataError(path + ": file not found (" + what + ")");
    }
    tables.inter = read_atomic_file(path, fo);
    out.bytes_read += static_cast<int64_t>(fs::file_size(path));
  } else {
    for (const std::string& part : opt.benchmark_filename) {
      const std::string path = file_path(opt, part + ".inter");
      if (!fs::is_regular_file(path)) {
        throw DataError(path + ": file not found (benchmark_filename part \"" + part + "\")");
      }
      Table t = read_atomic_file(path, fo);
      out.bytes_read += static_cast<int64_t>(fs::file_size(path));
      out.benchmark_sizes.push_back(t.n_rows());
      if (out.benchmark_sizes.size() == 1) {
        tables.inter = std::move(t);
        continue;
      }
      bool same = t.columns().size() == tables.inter.columns().size();
      for (const Column& c : t.columns()) {
        same = same && tables.inter.has(c.name) && tables.inter.column(c.name).type == c.type;
      }
      if (!same) {
        throw DataError(path + ":1: columns " + join(column_headers(t), ", ") +
                        " differ from those of " + tables.inter.source() + " (" +
                        join(column_headers(tables.inter), ", ") + ")");
      }
      tables.inter.append(t);
    }
  }
  require_token_field(tables.inter, opt.uid_field, "USER_ID_FIELD");
  require_token_field(tables.inter, opt.iid_field, "ITEM_ID_FIELD");
  check_unused_columns(opt, tables.inter);
  out.rows_read = tables.inter.n_rows();
  if (tables.inter.n_rows() == 0) {
    throw DataError(tables.inter.source() + ": no interactions (the file has a header only)");
  }

  for (const auto& [suffix, field, slot] :
       {std::tuple<std::string, std::string, std::optional<Table>*>{"user", opt.uid_field,
                                                                    &tables.user},
        {"item", opt.iid_field, &tables.item}}) {
    const std::string path = file_path(opt, suffix);
    AtomicFileOptions ffo;
    if (!fs::is_regular_file(path) || !selection(opt, vocabularies, suffix, ffo)) continue;
    Table t = read_atomic_file(path, ffo);
    out.bytes_read += static_cast<int64_t>(fs::file_size(path));
    if (t.columns().empty()) {
      log::warning("no columns loaded from " + path);
      continue;
    }
    require_token_field(t, field,
                        suffix == "user" ? "USER_ID_FIELD, needed when the .user "
                                           "file is loaded"
                                         : "ITEM_ID_FIELD, needed when the .item "
                                           "file is loaded");
    *slot = std::move(t);
  }

  if (opt.knowledge()) {
    out.knowledge.emplace(opt.dataset_dir(), opt.dataset, opt.iid_field, opt.kg,
                          opt.load_col->at("kg"), opt.load_col->at("link"), opt.field_separator);
    out.bytes_read += out.knowledge->bytes_read();
  }
  return out;
}

std::vector<std::string> field_names_of(const DatasetTables& tables) {
  std::vector<std::string> names;
  for (const Table* t : tables.all()) {
    for (const Column& c : t->columns()) {
      if (std::find(names.begin(), names.end(), c.name) == names.end()) {
        names.push_back(c.name);
      }
    }
  }
  return names;
}

}  // namespace recbole::data

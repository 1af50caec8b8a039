#pragma once
// The reading stage of Dataset::load: the atomic files of a dataset into typed tables.
//
//   in:  the options (data_path, dataset, load_col / unload_col, separators, benchmark_filename,
//        unused_col, load_col.kg / .link), and the parse vocabularies (dataset_tables.h) of the
//        user and item id fields and of the alias fields (id_aliases.h)
//   out: the .inter table (or the benchmark parts appended in order, with their sizes), the
//        .user / .item tables where the file exists and load_col selects it, the knowledge
//        graph's files (KnowledgeLoader) with load_col.kg, and the bytes and rows read. Token
//        ids are the provisional ids of the parse vocabularies, which gain every token-like
//        column not yet in them.
//
// Checks, in this order: load_col has an "inter" entry, and the .inter's load_col and
// unload_col are not both lists (ConfigError); the .inter file (each part) exists and the parts
// have the same columns, USER_ID_FIELD and ITEM_ID_FIELD are loaded token columns (DataError);
// unused_col.inter names loaded columns other than the id fields (ConfigError); the interactions
// are not empty (DataError); then for the .user and the .item file: not both load_col and
// unload_col lists (ConfigError), its id field a loaded token column (DataError). A .user /
// .item file that loads no column is skipped with a warning.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recbole/data/dataset_options.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/knowledge_graph.h"

namespace recbole::data {

struct DatasetFiles {
  DatasetTables tables;
  std::optional<KnowledgeLoader> knowledge;  // with load_col.kg (options.knowledge())
  std::vector<int64_t> benchmark_sizes;      // with benchmark_filename: rows of each part
  int64_t bytes_read = 0;                    // size of every file read, the .kg/.link included
  int64_t rows_read = 0;                     // interaction rows before filtering
};

// Reads the files of `options`. Throws as listed above, and as read_atomic_file and
// KnowledgeLoader do.
DatasetFiles read_dataset_files(const DatasetOptions& options, Vocabularies& vocabularies);

// RecBole's field order: the .inter columns, then the .user's, then the .item's (first
// occurrence wins).
std::vector<std::string> field_names_of(const DatasetTables& tables);

}  // namespace recbole::data

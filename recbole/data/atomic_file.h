#pragma once
// Reader of RecBole atomic files (.inter, .user, .item, and <name>.<part>.inter).
//
// Format: the first line is the header, `name:type` entries (type token, token_seq, float,
// float_seq) separated by the field separator (default TAB); each further line is one row with
// exactly as many fields. Sequence cells split on the sequence separator (default space), empty
// pieces dropped. An empty cell is missing (token -1, float NaN, empty sequence); float cells
// also read "nan", "NaN", "NA", "N/A", "null", "NULL", "None" as missing, like pandas. Blank
// lines are skipped. Unlike RecBole (which drops exactly one trailing character of the header),
// CRLF line ends are accepted, and a UTF-8 byte-order mark before the header is skipped.
// Quoting is not interpreted: a quote character is part of the cell.
//
// The file is read in large chunks; each cell is parsed in place (tokens interned once into the
// column's vocabulary, floats with std::from_chars) and columns not selected are skipped without
// conversion. Errors are recbole::DataError "path:line: ...", naming the column where one is
// concerned. Files of 8 MiB or more are parsed by two threads (the second half into
// vocabularies of its own, merged in file order): the table, the ids and the errors are those
// of one thread.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recbole/data/table.h"

namespace recbole::data {

// The most elements one token_seq / float_seq cell may hold (DataError naming file:line beyond).
constexpr int64_t kMaxSequenceLength = 100000;

struct AtomicFileOptions {
  std::string field_separator = "\t";
  std::string seq_separator = " ";
  // Columns to load: nullopt = every column; otherwise exactly these (each must be in the
  // header, else DataError naming the file and the missing column).
  std::optional<std::vector<std::string>> load_col;
  // Columns to skip (names absent from the header are ignored).
  std::vector<std::string> unload_col;
  // Vocabularies by field name, shared between files: a token-like column whose name is here
  // interns into that vocabulary; other token-like columns get a new one, added to the map when
  // `vocabularies` is not null (so the parts of a benchmark split share them).
  std::map<std::string, std::shared_ptr<Vocabulary>>* vocabularies = nullptr;
};

// One header entry.
struct HeaderField {
  std::string name;
  FieldType type;
};

// Parses the header line of `path` (for checks and tools). Throws DataError.
std::vector<HeaderField> read_atomic_header(const std::string& path,
                                            const std::string& field_separator = "\t");

// Reads `path` into a table whose columns are the selected ones in header order.
// Throws DataError: file missing or unreadable, bad header (entry not name:type, unknown type,
// duplicate column), a load_col column not in the header, a row with the wrong number of
// fields, an unparsable float.
Table read_atomic_file(const std::string& path, const AtomicFileOptions& options);

}  // namespace recbole::data

#pragma once
// Typed columns of one atomic file (.inter, .user or .item) after parsing.
//
// Storage per field type (n = rows, m = values of all sequences together):
//   token      tokens  [n] int32  id in `vocab`; -1 = missing cell (before remapping)
//   token_seq  tokens  [m] int32, offsets [n + 1] int64 (row r = values [offsets[r], offsets[r+1]))
//   float      floats  [n] double; NaN = missing cell
//   float_seq  floats  [m] double, offsets [n + 1] int64
// A missing sequence cell is an empty sequence. Before remapping, token ids are provisional (order
// of first appearance while parsing); after remapping, id 0 is "[PAD]" and `vocab` is replaced.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recbole/data/vocabulary.h"

namespace recbole::data {

enum class FieldType { kToken, kTokenSeq, kFloat, kFloatSeq };

// "token", "token_seq", "float", "float_seq".
const char* field_type_name(FieldType type);
// The type named by `name` (exact spelling), or nullopt.
std::optional<FieldType> parse_field_type(std::string_view name);

struct Column {
  std::string name;
  FieldType type = FieldType::kToken;
  std::vector<int32_t> tokens;
  std::vector<double> floats;
  std::vector<int64_t> offsets;
  std::shared_ptr<Vocabulary> vocab;

  bool is_seq() const { return type == FieldType::kTokenSeq || type == FieldType::kFloatSeq; }
  bool is_token_like() const { return type == FieldType::kToken || type == FieldType::kTokenSeq; }
  bool is_float_like() const { return !is_token_like(); }
  // Number of rows.
  int64_t size() const;
  // "name:type", as in a header.
  std::string header() const;
};

class Table {
 public:
  Table() = default;
  // `source` names the table in messages: the file path it was read from.
  explicit Table(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }
  int64_t n_rows() const { return n_rows_; }

  bool has(std::string_view name) const { return index_of(name) >= 0; }
  // Position of the column `name`, or -1.
  int index_of(std::string_view name) const;
  // The column `name`; throws std::out_of_range when absent (a caller bug, not a data error).
  Column& column(std::string_view name);
  const Column& column(std::string_view name) const;
  std::vector<Column>& columns() { return columns_; }
  const std::vector<Column>& columns() const { return columns_; }

  // Adds a column; its size must equal n_rows() unless the table has no column yet.
  void add_column(Column column);
  void remove_column(std::string_view name);
  // Sets the row count of a table whose columns were filled directly (used by the parser).
  void set_n_rows(int64_t n) { n_rows_ = n; }

  // Keeps the rows r with keep[r] != 0, in order (in place). keep: [n_rows] uint8.
  void filter(const std::vector<uint8_t>& keep);
  // Row i of the result is old row rows[i]; rows[i] == -1 gives a missing row (token -1, float
  // NaN, empty sequence). rows: [k] int64.
  void take(const std::vector<int64_t>& rows);
  // Appends the rows of `other` (same column names and types, any order) to this table.
  void append(const Table& other);

 private:
  std::string source_;
  int64_t n_rows_ = 0;
  std::vector<Column> columns_;
};

}  // namespace recbole::data

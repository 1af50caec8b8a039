#include "recbole/data/table.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace recbole::data {

const char* field_type_name(FieldType type) {
  switch (type) {
    case FieldType::kToken:
      return "token";
    case FieldType::kTokenSeq:
      return "token_seq";
    case FieldType::kFloat:
      return "float";
    case FieldType::kFloatSeq:
      return "float_seq";
  }
  return "token";
}

std::optional<FieldType> parse_field_type(std::string_view name) {
  if (name == "token") return FieldType::kToken;
  if (name == "token_seq") return FieldType::kTokenSeq;
  if (name == "float") return FieldType::kFloat;
  if (name == "float_seq") return FieldType::kFloatSeq;
  return std::nullopt;
}

int64_t Column::size() const {
  if (is_seq()) return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1;
  return type == FieldType::kToken ? static_cast<int64_t>(tokens.size())
                                   : static_cast<int64_t>(floats.size());
}

std::string Column::header() const { return name + ":" + field_type_name(type); }

int Table::index_of(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Column& Table::column(std::string_view name) {
  const int i = index_of(name);
  if (i < 0) throw std::out_of_range("no column " + std::string(name) + " in " + source_);
  return columns_[static_cast<size_t>(i)];
}

const Column& Table::column(std::string_view name) const {
  const int i = index_of(name);
  if (i < 0) throw std::out_of_range("no column " + std::string(name) + " in " + source_);
  return columns_[static_cast<size_t>(i)];
}

void Table::add_column(Column column) {
  if (columns_.empty()) {
    n_rows_ = column.size();
  } else if (column.size() != n_rows_) {
    throw std::logic_error("column " + column.name + " has " + std::to_string(column.size()) +
                           " rows, table " + source_ + " has " + std::to_string(n_rows_));
  }
  columns_.push_back(std::move(column));
}

void Table::remove_column(std::string_view name) {
  const int i = index_of(name);
  if (i >= 0) columns_.erase(columns_.begin() + i);
}

namespace {

template <typename T>
void filter_values(std::vector<T>& values, const std::vector<uint8_t>& keep) {
  size_t out = 0;
  for (size_t r = 0; r < values.size(); ++r) {
    if (keep[r]) values[out++] = values[r];
  }
  values.resize(out);
  if (out < values.capacity() / 2) values.shrink_to_fit();  // heavy filtering: give memory back
}

template <typename T>
void filter_seq(std::vector<T>& values, std::vector<int64_t>& offsets,
                const std::vector<uint8_t>& keep) {
  // In place: kept values only move towards the front.
  size_t out_row = 0;
  int64_t out_value = 0;
  const size_t n = offsets.size() - 1;
  int64_t begin = offsets[0];
  for (size_t r = 0; r < n; ++r) {
    const int64_t end = offsets[r + 1];
    if (keep[r]) {
      for (int64_t v = begin; v < end; ++v) values[static_cast<size_t>(out_value++)] = values[v];
      offsets[++out_row] = out_value;
    }
    begin = end;
  }
  offsets[0] = 0;
  offsets.resize(out_row + 1);
  values.resize(static_cast<size_t>(out_value));
}

template <typename T>
void take_values(std::vector<T>& values, const std::vector<int64_t>& rows, T missing) {
  std::vector<T> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] < 0 ? missing : values[rows[i]];
  values.swap(out);
}

template <typename T>
void take_seq(std::vector<T>& values, std::vector<int64_t>& offsets,
              const std::vector<int64_t>& rows) {
  std::vector<int64_t> out_offsets(rows.size() + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t len = rows[i] < 0 ? 0 : offsets[rows[i] + 1] - offsets[rows[i]];
    out_offsets[i + 1] = out_offsets[i] + len;
  }
  std::vector<T> out(static_cast<size_t>(out_offsets.back()));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0) continue;
    std::copy(values.begin() + offsets[rows[i]], values.begin() + offsets[rows[i] + 1],
              out.begin() + out_offsets[i]);
  }
  values.swap(out);
  offsets.swap(out_offsets);
}

}  // namespace

void Table::filter(const std::vector<uint8_t>& keep) {
  int64_t kept = 0;
  for (int64_t r = 0; r < n_rows_; ++r) kept += keep[static_cast<size_t>(r)] ? 1 : 0;
  if (kept == n_rows_) return;
  for (Column& c : columns_) {
    switch (c.type) {
      case FieldType::kToken:
        filter_values(c.tokens, keep);
        break;
      case FieldType::kFloat:
        filter_values(c.floats, keep);
        break;
      case FieldType::kTokenSeq:
        filter_seq(c.tokens, c.offsets, keep);
        break;
      case FieldType::kFloatSeq:
        filter_seq(c.floats, c.offsets, keep);
        break;
    }
  }
  n_rows_ = kept;
}

void Table::take(const std::vector<int64_t>& rows) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Column& c : columns_) {
    switch (c.type) {
      case FieldType::kToken:
        take_values<int32_t>(c.tokens, rows, -1);
        break;
      case FieldType::kFloat:
        take_values<double>(c.floats, rows, nan);
        break;
      case FieldType::kTokenSeq:
        take_seq(c.tokens, c.offsets, rows);
        break;
      case FieldType::kFloatSeq:
        take_seq(c.floats, c.offsets, rows);
        break;
    }
  }
  n_rows_ = static_cast<int64_t>(rows.size());
}

void Table::append(const Table& other) {
  if (other.columns_.size() != columns_.size()) {
    throw std::logic_error("append: column counts differ");
  }
  for (Column& c : columns_) {
    const Column& o = other.column(c.name);
    if (o.type != c.type || (c.is_token_like() && o.vocab != c.vocab)) {
      throw std::logic_error("append: column " + c.name + " differs");
    }
    if (c.is_seq()) {
      const int64_t base = c.offsets.back();
      for (size_t r = 1; r < o.offsets.size(); ++r) c.offsets.push_back(base + o.offsets[r]);
    }
    if (c.is_token_like()) {
      c.tokens.insert(c.tokens.end(), o.tokens.begin(), o.tokens.end());
    } else {
      c.floats.insert(c.floats.end(), o.floats.begin(), o.floats.end());
    }
  }
  n_rows_ += other.n_rows_;
}

}  // namespace recbole::data

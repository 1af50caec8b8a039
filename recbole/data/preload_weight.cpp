#include "recbole/data/preload_weight.h"

#include <algorithm>
#include <cmath>

#include "recbole/utils/error.h"

namespace recbole::data {
namespace {

std::string entry_text(const std::string& id_field, const std::string& value_field) {
  return "preload_weight: {" + id_field + ": " + value_field + "}";
}

std::string sources_of(const std::vector<const Table*>& tables, const std::string& field) {
  std::string out;
  for (const Table* t : tables)
    if (t->has(field)) out += (out.empty() ? "" : ", ") + t->source();
  return out;
}

std::string loaded_files(const std::vector<const Table*>& tables) {
  std::string out;
  for (const Table* t : tables) out += (out.empty() ? "" : ", ") + t->source();
  return out;
}

// The values of row r of a float or float_seq column.
std::pair<const double*, int64_t> row_values(const Column& c, size_t r) {
  if (c.type == FieldType::kFloat) return {&c.floats[r], 1};
  return {c.floats.data() + c.offsets[r], c.offsets[r + 1] - c.offsets[r]};
}

bool same_values(std::pair<const double*, int64_t> a, std::pair<const double*, int64_t> b) {
  if (a.second != b.second) return false;
  for (int64_t k = 0; k < a.second; ++k) {
    const double x = a.first[k], y = b.first[k];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

std::string values_text(std::pair<const double*, int64_t> v) {
  std::string out = "[";
  for (int64_t k = 0; k < v.second; ++k) {
    if (k > 0) out += " ";
    out += std::to_string(v.first[k]);
  }
  return out + "]";
}

}  // namespace

std::vector<PreloadSource> resolve_preload(
    const std::vector<std::pair<std::string, std::string>>& entries,
    const std::vector<const Table*>& tables) {
  std::vector<PreloadSource> out;
  for (const auto& [id_field, value_field] : entries) {
    const std::string what = entry_text(id_field, value_field);
    for (const auto& [field, role] :
         {std::pair{&id_field, "id field"}, std::pair{&value_field, "value field"}})
      if (sources_of(tables, *field).empty())
        throw ConfigError(what + ": " + role + " " + *field + " is not a loaded column of " +
                          loaded_files(tables) + " (check load_col and the headers)");
    PreloadSource s{id_field, value_field, tables.size(), 1};
    for (size_t k = 0; k < tables.size() && s.table == tables.size(); ++k)
      if (tables[k]->has(id_field) && tables[k]->has(value_field)) s.table = k;
    if (s.table == tables.size())
      throw ConfigError(what + ": id field " + id_field + " is a column of " +
                        sources_of(tables, id_field) + " but value field " + value_field +
                        " is a column of " + sources_of(tables, value_field) +
                        "; expected both fields in one file");
    const Table& t = *tables[s.table];
    const Column& id = t.column(id_field);
    const Column& value = t.column(value_field);
    if (id.type != FieldType::kToken)
      throw ConfigError(what + ": " + t.source() + ": id field " + id_field + " is of type " +
                        field_type_name(id.type) + "; expected token");
    if (!value.is_float_like())
      throw ConfigError(what + ": " + t.source() + ": value field " + value_field + " is of type " +
                        field_type_name(value.type) + "; expected float or float_seq");
    if (value.type == FieldType::kFloatSeq) {
      s.width = 0;
      for (size_t r = 0; r + 1 < value.offsets.size(); ++r)
        s.width = std::max(s.width, value.offsets[r + 1] - value.offsets[r]);
    }
    out.push_back(s);
  }
  return out;
}

void check_preload_ids(const std::vector<PreloadSource>& sources,
                       const std::vector<const Table*>& tables) {
  for (const PreloadSource& s : sources) {
    const Table& t = *tables[s.table];
    const Column& id = t.column(s.id_field);
    const Column& value = t.column(s.value_field);
    std::vector<int64_t> first_row(static_cast<size_t>(id.vocab->size()), -1);
    for (size_t r = 0; r < id.tokens.size(); ++r) {
      const int32_t i = id.tokens[r];
      if (i <= 0) continue;  // a missing id: no row of the matrix
      int64_t& first = first_row[static_cast<size_t>(i)];
      if (first < 0) {
        first = static_cast<int64_t>(r);
        continue;
      }
      const auto a = row_values(value, static_cast<size_t>(first));
      const auto b = row_values(value, r);
      if (!same_values(a, b))
        throw DataError(entry_text(s.id_field, s.value_field) + ": " + t.source() + ": " +
                        s.id_field + " " + id.vocab->token(i) + " has two rows with different " +
                        s.value_field + " values (" + values_text(a) + " and " + values_text(b) +
                        "); expected one value per id");
    }
  }
}

PreloadWeights build_preload(const std::vector<PreloadSource>& sources,
                             const std::vector<const Table*>& tables,
                             const std::vector<const std::vector<uint8_t>*>& from_file) {
  PreloadWeights out;
  for (const PreloadSource& s : sources) {
    const Table& t = *tables[s.table];
    const Column& id = t.column(s.id_field);
    const Column& value = t.column(s.value_field);
    const std::vector<uint8_t>* rows = from_file[s.table];
    torch::Tensor m = torch::zeros({id.vocab->size(), s.width}, torch::kFloat32);
    float* p = m.data_ptr<float>();
    for (size_t r = 0; r < id.tokens.size(); ++r) {
      const int32_t i = id.tokens[r];
      if (i <= 0 || (rows != nullptr && !(*rows)[r])) continue;
      const auto [v, n] = row_values(value, r);
      for (int64_t k = 0; k < std::min(n, s.width); ++k)
        p[i * s.width + k] = static_cast<float>(v[k]);
    }
    out.by_field[s.id_field] = m;
  }
  return out;
}

}  // namespace recbole::data

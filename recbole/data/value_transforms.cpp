#include "recbole/data/value_transforms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::data {

namespace {

// numpy's pairwise summation of float64 (add.reduce: first element, then the pairwise sum of the
// rest), so that NaN fills use the very mean pandas computes.
double pairwise_sum(const double* a, int64_t n) {
  if (n < 8) {
    double res = 0.;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double numpy_sum(const std::vector<double>& v) {
  if (v.empty()) return 0.;
  return v[0] + pairwise_sum(v.data() + 1, static_cast<int64_t>(v.size()) - 1);
}

}  // namespace

void fill_nan(DatasetTables& tables) {
  for (Table* t : tables.all()) {
    for (Column& c : t->columns()) {
      if (c.type == FieldType::kToken) {
        for (int32_t& v : c.tokens) v = v < 0 ? 0 : v;
      } else if (c.type == FieldType::kFloat) {
        int64_t count = 0;
        std::vector<double> zeroed(c.floats.size());
        for (size_t r = 0; r < c.floats.size(); ++r) {
          const bool missing = std::isnan(c.floats[r]);
          zeroed[r] = missing ? 0. : c.floats[r];
          count += missing ? 0 : 1;
        }
        if (count == static_cast<int64_t>(c.floats.size())) continue;
        const double mean = count > 0 ? numpy_sum(zeroed) / static_cast<double>(count)
                                      : std::numeric_limits<double>::quiet_NaN();
        for (double& v : c.floats) v = std::isnan(v) ? mean : v;
      }
      // Missing sequences are already empty.
    }
  }
}

void set_label_by_threshold(DatasetTables& tables, const DatasetOptions& opt,
                            std::vector<std::string>& field_names) {
  if (!opt.threshold) return;
  const auto& [field, value] = *opt.threshold;
  Table& inter = tables.inter;
  if (!inter.has(field)) {
    throw DataError("threshold: field " + field + " is not a loaded column of " + inter.source() +
                    " (loaded: " + join(column_names(inter), ", ") + ")");
  }
  if (inter.column(field).type != FieldType::kFloat) {
    throw DataError("threshold: field " + field + " of " + inter.source() + " is " +
                    field_type_name(inter.column(field).type) + ", expected a float field");
  }
  std::vector<double> label(inter.column(field).floats.size());
  const std::vector<double>& src = inter.column(field).floats;
  for (size_t r = 0; r < src.size(); ++r) label[r] = src[r] >= value ? 1.0 : 0.0;
  const std::string& label_field = opt.label_field;
  if (inter.has(label_field)) {
    Column& c = inter.column(label_field);
    c.type = FieldType::kFloat;
    c.tokens.clear();
    c.offsets.clear();
    c.vocab.reset();
    c.floats = std::move(label);
  } else {
    Column c;
    c.name = label_field;
    c.type = FieldType::kFloat;
    c.floats = std::move(label);
    inter.add_column(std::move(c));
    field_names.push_back(label_field);
  }
  if (field != label_field) {
    inter.remove_column(field);
    field_names.erase(std::find(field_names.begin(), field_names.end(), field));
  }
}

void normalize(DatasetTables& tables, const DatasetOptions& opt,
               const std::vector<std::string>& field_names) {
  std::vector<std::string> fields;
  if (!opt.normalize_field.empty()) {
    if (opt.normalize_all) {
      throw ConfigError("normalize_field and normalize_all: cannot be set at the same time");
    }
    for (const std::string& f : opt.normalize_field) {
      const Column* found = nullptr;
      for (Table* t : tables.all()) {
        if (t->has(f)) found = &t->column(f);
      }
      if (found == nullptr) {
        throw DataError("normalize_field: field " + f + " is not a loaded column of dataset " +
                        opt.dataset + " (loaded: " + join(field_names, ", ") + ")");
      }
      if (!found->is_float_like()) {
        log::warning(f + " is not a FLOAT/FLOAT_SEQ feat, which will not be normalized.");
        continue;
      }
      fields.push_back(f);
    }
  } else if (opt.normalize_all) {
    for (Table* t : tables.all()) {
      for (const Column& c : t->columns()) {
        if (c.is_float_like()) fields.push_back(c.name);
      }
    }
  } else {
    return;
  }
  for (Table* t : tables.all()) {
    for (Column& c : t->columns()) {
      if (!c.is_float_like() || std::find(fields.begin(), fields.end(), c.name) == fields.end()) {
        continue;
      }
      if (c.floats.empty()) continue;
      double mn = std::numeric_limits<double>::infinity();
      double mx = -mn;
      for (double v : c.floats) {
        if (std::isnan(v)) continue;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      if (mx == mn) {
        log::warning("All the same value in [" + c.name + "] from [" + t->source() +
                     "]; it is set to 1.0.");
        for (double& v : c.floats) v = 1.0;
      } else {
        const double range = mx - mn;
        for (double& v : c.floats) v = (v - mn) / range;
      }
    }
  }
}

}  // namespace recbole::data

#include "recbole/data/dataset.h"

// Dataset's accessors and statistics; the load itself is DatasetLoader's (dataset_loader.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "recbole/data/dataset_loader.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/preload_weight.h"
#include "recbole/utils/error.h"
#include "recbole/utils/text.h"

namespace recbole::data {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for 1e-4 <= |x| < 1e16.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const int a = std::abs(exponent);
    if (a < 10) out += "0";
    out += std::to_string(a);
    return out;
  }
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return sign + out;
}

Dataset Dataset::load(const DatasetOptions& options) { return DatasetLoader::load(options); }

const PreloadWeights& Dataset::preload_weights() const {
  static const PreloadWeights kNone;
  return preload_ ? *preload_ : kNone;
}

const std::vector<int32_t>& Dataset::inter_users() const {
  return inter_.column(options_.uid_field).tokens;
}
const std::vector<int32_t>& Dataset::inter_items() const {
  return inter_.column(options_.iid_field).tokens;
}
const std::string& Dataset::user_token(int32_t id) const {
  return inter_.column(options_.uid_field).vocab->token(id);
}
const std::string& Dataset::item_token(int32_t id) const {
  return inter_.column(options_.iid_field).vocab->token(id);
}
int32_t Dataset::user_id(std::string_view token) const {
  return inter_.column(options_.uid_field).vocab->find(token);
}
int32_t Dataset::item_id(std::string_view token) const {
  return inter_.column(options_.iid_field).vocab->find(token);
}

const std::vector<double>& Dataset::inter_floats(std::string_view name) const {
  if (!inter_.has(name) || inter_.column(name).type != FieldType::kFloat) {
    throw DataError(inter_.source() + ": no float column " + std::string(name) +
                    " (loaded: " + join(column_names(inter_), ", ") + ")");
  }
  return inter_.column(name).floats;
}

bool Dataset::is_unused_inter_field(std::string_view name) const {
  auto it = options_.unused_col.find("inter");
  if (it == options_.unused_col.end()) return false;
  return std::find(it->second.begin(), it->second.end(), name) != it->second.end();
}

namespace {
double average_actions(const std::vector<int32_t>& ids, int64_t n_ids) {
  std::vector<uint8_t> present(static_cast<size_t>(n_ids), 0);
  int64_t distinct = 0;
  for (int32_t id : ids) {
    if (!present[static_cast<size_t>(id)]) {
      present[static_cast<size_t>(id)] = 1;
      ++distinct;
    }
  }
  // np.mean of the per-id counts: their (exact) sum over their number.
  return distinct == 0 ? std::numeric_limits<double>::quiet_NaN()
                       : static_cast<double>(ids.size()) / static_cast<double>(distinct);
}
}  // namespace

double Dataset::avg_actions_of_users() const { return average_actions(inter_users(), n_users_); }
double Dataset::avg_actions_of_items() const { return average_actions(inter_items(), n_items_); }

double Dataset::sparsity() const {
  return 1.0 - static_cast<double>(n_inters()) / static_cast<double>(n_users_) /
                   static_cast<double>(n_items_);
}

std::string Dataset::summary() const {
  std::string out = name_ + "\n";
  out += "The number of users: " + std::to_string(n_users_) + "\n";
  out += "Average actions of users: " + python_float_repr(avg_actions_of_users()) + "\n";
  out += "The number of items: " + std::to_string(n_items_) + "\n";
  out += "Average actions of items: " + python_float_repr(avg_actions_of_items()) + "\n";
  out += "The number of inters: " + std::to_string(n_inters()) + "\n";
  out += "The sparsity of the dataset: " + python_float_repr(sparsity() * 100) + "%\n";
  out += "Remain Fields: [";
  for (size_t i = 0; i < field_names_.size(); ++i) {
    out += (i ? ", '" : "'") + field_names_[i] + "'";
  }
  out += "]";
  if (kg_) out += "\n" + kg_->summary();
  return out;
}

}  // namespace recbole::data

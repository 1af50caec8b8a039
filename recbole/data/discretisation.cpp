#include "recbole/data/discretisation.h"

#include <algorithm>
#include <cmath>

#include "recbole/utils/error.h"

namespace recbole::data {
namespace {

BucketIds equal_width(const std::vector<double>& values, int64_t k) {
  BucketIds out;
  out.rows = k + 1;
  if (values.empty()) return out;
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  const double lo = *min, width = *max + 1e-9 - lo;
  out.ids.reserve(values.size());
  for (double v : values) {
    const auto id = static_cast<int64_t>(std::floor((v - lo) * static_cast<double>(k) / width)) + 1;
    out.ids.push_back(std::clamp<int64_t>(id, 1, k));  // rounding can not leave 1..k
  }
  return out;
}

BucketIds logarithmic(const std::vector<double>& values, bool sequence) {
  std::vector<double> t(values.size());
  std::transform(values.begin(), values.end(), t.begin(), [](double v) {
    if (v <= 2) return v;
    const double l = std::log(v);
    return std::floor(l * l + 1);
  });
  std::vector<double> distinct = t;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const int64_t first = sequence ? 1 : 0;
  BucketIds out;
  out.rows = std::max<int64_t>(static_cast<int64_t>(distinct.size()), 1) + first;
  out.ids.reserve(t.size());
  for (double v : t)
    out.ids.push_back(first +
                      (std::lower_bound(distinct.begin(), distinct.end(), v) - distinct.begin()));
  return out;
}

}  // namespace

BucketIds discretise(const std::vector<double>& values, const Discretisation& how, bool sequence) {
  for (double v : values)
    if (!std::isfinite(v))
      throw DataError("discretization: a value to bucket is not finite (" + std::to_string(v) +
                      ")");
  if (how.method == DiscretisationMethod::kEqualWidth) {
    if (how.buckets < 1)
      throw ConfigError("discretization: bucket: " + std::to_string(how.buckets) +
                        "; expected at least 1");
    return equal_width(values, how.buckets);
  }
  return logarithmic(values, sequence);
}

DiscretisationMethod parse_discretisation_method(const std::string& name,
                                                 const std::string& where) {
  if (name == "ED") return DiscretisationMethod::kEqualWidth;
  if (name == "LD") return DiscretisationMethod::kLogarithmic;
  throw ConfigError(where + ": method: " + name +
                    "; expected ED (equal-width buckets) or LD (logarithmic)");
}

}  // namespace recbole::data

#pragma once
// RecBole's discretisation of numerical context features (its `discretization` key): every
// value of a float or float_seq field becomes a bucket id, which the context models embed as a
// learned row of the field's table (base 1) instead of value × one row. Plain data, no libtorch.
#include <cstdint>
#include <string>
#include <vector>

namespace recbole::data {

enum class DiscretisationMethod {
  kEqualWidth,  // RecBole's ED: `bucket` intervals of equal width between the field's min and max
  kLogarithmic  // RecBole's LD: ⌊(ln v)² + 1⌋ for v > 2, v otherwise, then one id per result
};

struct Discretisation {
  DiscretisationMethod method = DiscretisationMethod::kEqualWidth;
  int64_t buckets = 1;  // kEqualWidth only: the number of intervals, ≥ 1
};

struct BucketIds {
  std::vector<int64_t> ids;  // one per value, in the values' order
  int64_t rows = 1;          // rows of the field's embedding table: every id is below it
};

// The bucket ids of a field's values (all its cells; for a sequence field every element).
//   kEqualWidth: lo = min, hi = max + 1e-9, id = ⌊(v − lo)·k / (hi − lo)⌋ + 1 ∈ 1..k, rows k + 1.
//   kLogarithmic: the distinct transformed values ranked in ascending order from 0, rows = their
//     count; with `sequence` the ranks start at 1 (rows + 1), as id 0 pads a sequence and
//     RecBole's rank 0 would be dropped from the pooling as padding (see docs/models.md).
// Values must be finite (filled and normalised before); an empty field gives rows 1 (or 2).
BucketIds discretise(const std::vector<double>& values, const Discretisation& how,
                     bool sequence = false);

// "ED" or "LD" → the method; a ConfigError naming `where` otherwise.
DiscretisationMethod parse_discretisation_method(const std::string& name, const std::string& where);

}  // namespace recbole::data

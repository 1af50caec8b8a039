// RecBole's discretisation of numerical context features: equal-width (ED) and logarithmic (LD)
// bucket ids, computed by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "recbole/data/discretisation.h"
#include "recbole/utils/error.h"

using recbole::data::Discretisation;
using recbole::data::DiscretisationMethod;
using recbole::data::discretise;

TEST_CASE("equal-width buckets split [min, max] into k intervals with ids 1..k",
          "[data][discretisation]") {
  const Discretisation ed{DiscretisationMethod::kEqualWidth, 4};
  // Width (40 + 1e-9) / 4: 0 → 1, 9.9 → 1, 15 → 2, 25 → 3, 39 → 4, 40 (the max) → 4.
  const auto b = discretise({0, 9.9, 15, 25, 39, 40}, ed);
  CHECK(b.ids == std::vector<int64_t>({1, 1, 2, 3, 4, 4}));
  CHECK(b.rows == 5);
  // Shifted and scaled the same way, the same ids.
  CHECK(discretise({-1, -0.505, -0.25, 0.25, 0.95, 1}, ed).ids ==
        std::vector<int64_t>({1, 1, 2, 3, 4, 4}));
  // A constant field falls in one bucket; one bucket holds everything.
  const auto constant = discretise({0.5, 0.5, 0.5}, ed).ids;
  CHECK(constant == std::vector<int64_t>(3, constant[0]));
  CHECK(discretise({3, -2, 7}, {DiscretisationMethod::kEqualWidth, 1}).ids ==
        std::vector<int64_t>({1, 1, 1}));
  CHECK(discretise({}, ed).rows == 5);
}

TEST_CASE("logarithmic buckets rank the distinct ⌊(ln v)² + 1⌋ (v > 2) or v",
          "[data][discretisation]") {
  const Discretisation ld{DiscretisationMethod::kLogarithmic, 0};
  // 0.5 and 2 stay; 3 → ⌊1.207 + 1⌋ = 2 (ties with 2); 10 → ⌊5.30 + 1⌋ = 6; 100 → ⌊21.2 + 1⌋ = 22;
  // 120 → ⌊22.9 + 1⌋ = 23. Distinct sorted: 0.5, 2, 6, 22, 23.
  const auto b = discretise({10, 0.5, 2, 3, 100, 120, 10}, ld);
  CHECK(b.ids == std::vector<int64_t>({2, 0, 1, 1, 3, 4, 2}));
  CHECK(b.rows == 5);
  // A sequence field keeps id 0 for padding: ranks start at 1.
  const auto seq = discretise({10, 0.5, 2, 3, 100, 120, 10}, ld, /*sequence=*/true);
  CHECK(seq.ids == std::vector<int64_t>({3, 1, 2, 2, 4, 5, 3}));
  CHECK(seq.rows == 6);
}

TEST_CASE("discretisation refuses what it cannot bucket", "[data][discretisation]") {
  CHECK_THROWS_AS(discretise({1, std::nan("")}, {DiscretisationMethod::kEqualWidth, 3}),
                  recbole::DataError);
  CHECK_THROWS_AS(discretise({1, std::numeric_limits<double>::infinity()},
                             {DiscretisationMethod::kLogarithmic, 0}),
                  recbole::DataError);
  CHECK_THROWS_AS(discretise({1, 2}, {DiscretisationMethod::kEqualWidth, 0}), recbole::ConfigError);
  CHECK(recbole::data::parse_discretisation_method("LD", "x") ==
        DiscretisationMethod::kLogarithmic);
  try {
    recbole::data::parse_discretisation_method("EF", "f.yaml: discretization.age");
    FAIL("accepted");
  } catch (const recbole::ConfigError& e) {
    CHECK(std::string(e.what()).find("f.yaml: discretization.age: method: EF") !=
          std::string::npos);
  }
}

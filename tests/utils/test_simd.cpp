#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "recbole/utils/simd.h"

TEST_CASE("simd::tanh follows std::tanh to 1e-6 over the whole float range", "[utils]") {
  double worst = 0, worst_small = 0;
  for (float x = -20.0f; x <= 20.0f; x += 0.00037f) {
    const double err = std::abs(double(recbole::simd::tanh(x)) - std::tanh(double(x)));
    worst = std::max(worst, err);
    if (std::abs(x) < 0.01f && x != 0.0f) worst_small = std::max(worst_small, err / std::abs(x));
  }
  CHECK(worst < 1e-6);
  CHECK(worst_small < 1e-6);  // relative near 0, where tanh(x) ≈ x
  CHECK(recbole::simd::tanh(0.0f) == 0.0f);
  CHECK(recbole::simd::tanh(1e-30f) == Approx(1e-30f).epsilon(1e-6));
  CHECK(recbole::simd::tanh(100.0f) == Approx(1.0f).epsilon(1e-7));
  CHECK(recbole::simd::tanh(-std::numeric_limits<float>::infinity()) ==
        Approx(-1.0f).epsilon(1e-7));
  CHECK(recbole::simd::tanh(-0.5f) == -recbole::simd::tanh(0.5f));  // odd
}

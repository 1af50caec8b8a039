#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/simd.h"

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

TEST_CASE("simd::exp follows std::exp to 2e-7 relative and is 0 far below", "[utils]") {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.00091f) {
    const double e = std::exp(double(x));
    worst = std::max(worst, std::abs(double(recbole::simd::exp(x)) - e) / e);
  }
  CHECK(worst < 2e-7);
  CHECK(recbole::simd::exp(0.0f) == 1.0f);
  CHECK(recbole::simd::exp(-88.0f) == 0.0f);     // below the smallest normal result
  CHECK(recbole::simd::exp(-10000.0f) == 0.0f);  // a masked attention score
  CHECK(std::isfinite(recbole::simd::exp(1000.0f)));
}

TEST_CASE("simd::erf follows std::erf to 1e-6 over the whole float range", "[utils]") {
  double worst = 0;
  for (float x = -10.0f; x <= 10.0f; x += 0.00037f)
    worst = std::max(worst, std::abs(double(recbole::simd::erf(x)) - std::erf(double(x))));
  CHECK(worst < 1e-6);
  CHECK(recbole::simd::erf(0.0f) == 0.0f);
  CHECK(recbole::simd::erf(-0.5f) == -recbole::simd::erf(0.5f));  // odd
  CHECK(recbole::simd::erf(100.0f) == Approx(1.0f).epsilon(1e-7));
}

TEST_CASE("simd::sum and simd::dot equal the sums in double, at every length", "[utils]") {
  std::vector<float> a(70), b(70);
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = std::sin(0.7f * static_cast<float>(k)) * static_cast<float>(k);
    b[k] = std::cos(0.3f * static_cast<float>(k));
  }
  // Lengths below, at and past the eight lanes, with and without a tail.
  for (const int64_t n : {0, 1, 7, 8, 9, 16, 64, 70}) {
    double sum = 0.0, dot = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      sum += a[static_cast<size_t>(k)];
      dot += static_cast<double>(a[static_cast<size_t>(k)]) * b[static_cast<size_t>(k)];
    }
    INFO("n " << n);
    CHECK(recbole::simd::sum(a.data(), n) == Approx(sum).margin(1e-4));
    CHECK(recbole::simd::dot(a.data(), b.data(), n) == Approx(dot).margin(1e-4));
  }
}

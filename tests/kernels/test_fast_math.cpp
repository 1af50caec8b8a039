// kernels/fast_math.h against double precision, run as the BPR loss runs them: inside a
// RECBOLE_MULTIVERSION loop (the clone this CPU picks, where GCC may fuse multiply-adds).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <vector>

#include "kernels/fast_math.h"

namespace {

RECBOLE_MULTIVERSION void exp_approx_all(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = recbole::kernels::exp_approx(x[i]);
}

RECBOLE_MULTIVERSION void log_approx_all(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = recbole::kernels::log_approx(x[i]);
}

// max |approx − exact| / |exact| over xs (exact 0 must be met exactly).
template <typename Approx, typename Exact>
double worst_relative(const std::vector<float>& xs, Approx approx, Exact exact) {
  std::vector<float> ys(xs.size());
  approx(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = exact(static_cast<double>(xs[i]));
    const double err = std::abs(static_cast<double>(ys[i]) - want);
    worst = std::max(worst, want == 0 ? (err == 0 ? 0.0 : 1.0) : err / std::abs(want));
  }
  return worst;
}

}  // namespace

TEST_CASE("exp_approx follows exp to 3e-7 relative over the clamped range [-87, 88]", "[kernels]") {
  std::vector<float> xs;
  for (float x = -87.f; x <= 88.f; x += 0.00013f) xs.push_back(x);
  xs.insert(xs.end(), {-87.f, 88.f, 0.f, -0.f, 1e-30f, -1e-30f, 0.6931472f});
  const double worst = worst_relative(xs, exp_approx_all, [](double x) { return std::exp(x); });
  INFO("worst relative error " << worst);
  CHECK(worst < 3e-7);
  float one = 0.f;
  exp_approx_all(&one, &one, 1);
  CHECK(one == 1.f);
}

TEST_CASE("log_approx follows log to 3e-7 relative over the positive normal floats", "[kernels]") {
  std::vector<float> xs;
  // Every float in [0.5, 2): each mantissa on both sides of the √2 fold, and 1 itself.
  for (float y = 0.5f; y < 2.f; y = std::nextafter(y, 3.f)) xs.push_back(y);
  // Geometric steps over the whole normal range, and the loss's 1e−10 + σ near both ends.
  for (float y = FLT_MIN; y < FLT_MAX / 2; y *= 1.0003f) xs.push_back(y);
  for (float x = -88.f; x <= 88.f; x += 0.001f) xs.push_back(1e-10f + 1.f / (1.f + std::exp(-x)));
  xs.insert(xs.end(), {FLT_MIN, FLT_MAX, 1e-10f, 1.f});
  const double worst = worst_relative(xs, log_approx_all, [](double y) { return std::log(y); });
  INFO("worst relative error " << worst);
  CHECK(worst < 3e-7);
}

TEST_CASE("exp_approx and log_approx compose into the BPR loss term to 1e-6", "[kernels]") {
  // −log(1e−10 + σ(x)) with σ(x) = 1 / (1 + e^−x), as score_chunk computes it after its clamp:
  // relative to the term where it is above 1, absolute below (σ near 1 is 1 − e^−x, which float
  // holds only to its ulp there, whatever the approximations).
  double worst = 0;
  std::vector<float> xs, e, l;
  for (float x = -30.f; x <= 30.f; x += 0.0007f) xs.push_back(std::min(std::max(-x, -87.f), 88.f));
  e.resize(xs.size());
  exp_approx_all(xs.data(), e.data(), static_cast<int64_t>(xs.size()));
  std::vector<float> s(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) s[i] = 1e-10f + 1.f / (1.f + e[i]);
  l.resize(xs.size());
  log_approx_all(s.data(), l.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = -static_cast<double>(xs[i]);
    const double want = -std::log(1e-10 + 1.0 / (1.0 + std::exp(-x)));
    worst = std::max(worst, std::abs(-static_cast<double>(l[i]) - want) / std::max(want, 1.0));
  }
  INFO("worst error " << worst);
  CHECK(worst < 1e-6);
}

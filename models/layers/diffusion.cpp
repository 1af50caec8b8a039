#include "models/layers/diffusion.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace recbole::models::layers {
namespace {

constexpr double kMaxBeta = 0.999;

// numpy.linspace(lo, hi, n): n evenly spaced values, both ends included (n = 1: lo).
std::vector<double> evenly_spaced(double lo, double hi, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = n == 1 ? lo : lo + (hi - lo) * static_cast<double>(i) / (n - 1);
  return v;
}

}  // namespace

std::vector<double> diffusion_betas(const std::string& schedule, int64_t steps, double scale,
                                    double lo, double hi) {
  std::vector<double> betas;
  if (schedule == "linear") return evenly_spaced(scale * lo, scale * hi, steps);
  if (schedule == "linear-var") {
    const std::vector<double> variance = evenly_spaced(scale * lo, scale * hi, steps);
    for (size_t i = 0; i < variance.size(); ++i)
      betas.push_back(
          i == 0 ? variance[0]
                 : std::min(1.0 - (1.0 - variance[i]) / (1.0 - variance[i - 1]), kMaxBeta));
    return betas;
  }
  if (schedule == "cosine") {
    const double pi = std::acos(-1.0);
    auto alpha_bar = [pi](double s) {
      const double c = std::cos((s + 0.008) / 1.008 * pi / 2);
      return c * c;
    };
    for (int64_t i = 0; i < steps; ++i) {
      const double s1 = static_cast<double>(i) / steps, s2 = static_cast<double>(i + 1) / steps;
      betas.push_back(std::min(1.0 - alpha_bar(s2) / alpha_bar(s1), kMaxBeta));
    }
    return betas;
  }
  if (schedule == "binomial") {
    for (int64_t t = 0; t < steps; ++t) betas.push_back(1.0 / static_cast<double>(steps - t + 1));
    return betas;
  }
  throw std::invalid_argument("unknown noise schedule \"" + schedule + "\"");
}

DiffusionSchedule::DiffusionSchedule(std::vector<double> b) : betas(std::move(b)) {
  const size_t n = betas.size();
  double cumprod = 1.0;
  for (size_t t = 0; t < n; ++t) {
    alphas_cumprod_prev.push_back(cumprod);
    cumprod *= 1.0 - betas[t];
    alphas_cumprod.push_back(cumprod);
  }
  for (size_t t = 0; t < n; ++t) {
    const double a = alphas_cumprod[t], a_prev = alphas_cumprod_prev[t];
    sqrt_alphas_cumprod.push_back(std::sqrt(a));
    sqrt_one_minus_alphas_cumprod.push_back(std::sqrt(1.0 - a));
    sqrt_recip_alphas_cumprod.push_back(std::sqrt(1.0 / a));
    sqrt_recipm1_alphas_cumprod.push_back(std::sqrt(1.0 / a - 1.0));
    posterior_variance.push_back(betas[t] * (1.0 - a_prev) / (1.0 - a));
    posterior_mean_coef1.push_back(betas[t] * std::sqrt(a_prev) / (1.0 - a));
    posterior_mean_coef2.push_back((1.0 - a_prev) * std::sqrt(1.0 - betas[t]) / (1.0 - a));
  }
  for (size_t t = 0; t < n; ++t) {
    const size_t from = t == 0 && n > 1 ? 1 : t;
    posterior_log_variance_clipped.push_back(n == 1 ? 0.0 : std::log(posterior_variance[from]));
  }
}

}  // namespace recbole::models::layers

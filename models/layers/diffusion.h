#pragma once
// The Gaussian diffusion of DiffRec (Ho et al. 2020's DDPM quantities over `steps` steps, t
// counted from 0 as RecBole does): the noise schedule β_t and the coefficients derived from it.
// Plain doubles on the host; a model turns the ones it needs into tensors per batch.
#include <cstdint>
#include <string>
#include <vector>

namespace recbole::models::layers {

// β_t, t = 0 … steps − 1, by RecBole's schedules: "linear" (evenly spaced from scale·lo to
// scale·hi), "linear-var" (that spacing taken as the variance 1 − ᾱ_t, β_t = 1 − ᾱ_t / ᾱ_{t−1}
// capped at 0.999), "cosine" (ᾱ(s) = cos²((s + 0.008) / 1.008 · π/2) sampled at t/steps, β capped
// at 0.999) and "binomial" (β_t = 1 / (steps − t + 1), scale, lo and hi unused). Anything else
// throws std::invalid_argument (the key declaration lists the names).
std::vector<double> diffusion_betas(const std::string& schedule, int64_t steps, double scale,
                                    double lo, double hi);

struct DiffusionSchedule {
  // betas: every β_t in (0, 1] (the caller checks, naming its keys).
  explicit DiffusionSchedule(std::vector<double> betas);

  int64_t steps() const { return static_cast<int64_t>(betas.size()); }
  // ᾱ_t / (1 − ᾱ_t), the signal-to-noise ratio after step t.
  double snr(int64_t t) const { return alphas_cumprod[t] / (1.0 - alphas_cumprod[t]); }

  std::vector<double> betas;
  std::vector<double> alphas_cumprod;       // ᾱ_t = Π_{s ≤ t} (1 − β_s)
  std::vector<double> alphas_cumprod_prev;  // ᾱ_{t−1}, 1 at t = 0
  std::vector<double> sqrt_alphas_cumprod, sqrt_one_minus_alphas_cumprod;
  std::vector<double> sqrt_recip_alphas_cumprod, sqrt_recipm1_alphas_cumprod;
  // q(x_{t−1} | x_t, x_0): variance β_t (1 − ᾱ_{t−1}) / (1 − ᾱ_t), its log with t = 0 taking
  // t = 1's value (the variance there is 0; with one step it is never used), and the mean
  // coef1 · x_0 + coef2 · x_t.
  std::vector<double> posterior_variance, posterior_log_variance_clipped;
  std::vector<double> posterior_mean_coef1, posterior_mean_coef2;
};

}  // namespace recbole::models::layers

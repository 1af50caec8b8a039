#include "run/experiment/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "recbole/utils/error.h"
#include "recbole/utils/splitmix.h"

namespace recbole::experiment {
namespace {

// splitmix64: a small generator whose stream is the same on every platform (the standard
// distributions are not), seeded per (search seed, trial index).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t index) : state_(seed * kSplitMixGamma ^ (index + 1)) { next(); }
  uint64_t next() { return splitmix64_next(state_); }
  // In [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  size_t below(size_t n) { return std::min(n - 1, static_cast<size_t>(uniform() * n)); }
  // Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // An index drawn with probability proportional to `weights`.
  size_t pick(const std::vector<double>& weights) {
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    double r = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.size() - 1;
  }

 private:
  uint64_t state_;
};

double round_significant(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return std::strtod(buf, nullptr);
}

bool integral(double x) { return std::floor(x) == x && std::fabs(x) < 9e15; }

// The recorded value of a continuous parameter drawn as `x` (in value space).
nlohmann::json continuous_value(const Parameter& p, double x) {
  if (p.kind == Distribution::kQUniform) {
    const double q = p.args[2];
    x = std::round(x / q) * q;
    if (integral(q) && integral(p.args[0])) return static_cast<int64_t>(std::llround(x));
  }
  return round_significant(x);
}

nlohmann::json sample_prior(const Parameter& p, Rng& rng) {
  switch (p.kind) {
    case Distribution::kChoice:
      return p.values[rng.below(p.values.size())];
    case Distribution::kUniform:
    case Distribution::kQUniform:
      return continuous_value(p, rng.uniform(p.args[0], p.args[1]));
    case Distribution::kLogUniform:
      return continuous_value(p, std::exp(rng.uniform(p.args[0], p.args[1])));
  }
  return nullptr;
}

// ---- exhaustive ---------------------------------------------------------------------------

class ExhaustiveSearch : public SearchAlgorithm {
 public:
  ExhaustiveSearch(const SearchSpace& space, size_t max_evals)
      : space_(space), max_evals_(max_evals) {
    require_all_choices(space);
  }
  std::optional<Assignment> propose(size_t index, const std::vector<Observation>&) override {
    if (index >= max_evals_) return std::nullopt;
    Assignment a(space_.params.size());
    size_t rest = index;
    for (size_t i = space_.params.size(); i-- > 0;) {
      const Parameter& p = space_.params[i];
      a[i] = {p.name, p.values[rest % p.values.size()]};
      rest /= p.values.size();
    }
    if (rest > 0) return std::nullopt;  // past the last combination
    return a;
  }

 private:
  SearchSpace space_;
  size_t max_evals_;
};

// ---- random -------------------------------------------------------------------------------

class RandomSearch : public SearchAlgorithm {
 public:
  RandomSearch(const SearchSpace& space, uint64_t seed) : space_(space), seed_(seed) {}
  std::optional<Assignment> propose(size_t index, const std::vector<Observation>&) override {
    Rng rng(seed_, index);
    Assignment a;
    for (const Parameter& p : space_.params) a.emplace_back(p.name, sample_prior(p, rng));
    return a;
  }

 private:
  SearchSpace space_;
  uint64_t seed_;
};

// ---- TPE ----------------------------------------------------------------------------------

// hyperopt's linear_forgetting_weights: the oldest of n observations weigh from 1/n up to 1,
// the newest `lf` weigh 1.
std::vector<double> forgetting_weights(size_t n, size_t lf) {
  std::vector<double> w(n, 1.0);
  if (n < lf || lf == 0) return w;
  const size_t ramp = n - lf;
  for (size_t i = 0; i < ramp; ++i)
    w[i] = ramp == 1 ? 1.0 / n : 1.0 / n + (1.0 - 1.0 / n) * i / (ramp - 1);
  return w;
}

// A Gaussian mixture truncated to [low, high] (in the parameter's working space: the value, or
// its logarithm for loguniform).
struct Mixture {
  std::vector<double> weights, mus, sigmas;
  double low = 0, high = 0;
};

// hyperopt's adaptive_parzen_normal: one component per observation (`xs`, in time order) and
// one for the prior, sorted by centre; each sigma is the larger gap to its neighbours, clipped
// to [prior_sigma / min(100, n + 1), prior_sigma]; the prior keeps prior_sigma.
Mixture parzen(const std::vector<double>& xs, double low, double high, const TpeOptions& o) {
  const double prior_mu = 0.5 * (low + high);
  const double prior_sigma = high - low;
  const std::vector<double> obs_w = forgetting_weights(xs.size(), o.linear_forgetting);
  std::vector<size_t> order(xs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return xs[a] < xs[b]; });
  Mixture m;
  m.low = low;
  m.high = high;
  size_t prior_pos = 0;
  if (xs.size() == 1) {
    prior_pos = prior_mu < xs[0] ? 0 : 1;
  } else {
    while (prior_pos < order.size() && xs[order[prior_pos]] < prior_mu) ++prior_pos;
  }
  for (size_t i = 0; i <= order.size(); ++i) {
    if (i == prior_pos) {
      m.mus.push_back(prior_mu);
      m.weights.push_back(o.prior_weight);
    }
    if (i < order.size()) {
      m.mus.push_back(xs[order[i]]);
      m.weights.push_back(obs_w[order[i]]);
    }
  }
  const size_t n = m.mus.size();
  m.sigmas.assign(n, prior_sigma);
  if (n == 2) {
    m.sigmas[1 - prior_pos] = 0.5 * prior_sigma;
  } else if (n > 2) {
    for (size_t i = 1; i + 1 < n; ++i)
      m.sigmas[i] = std::max(m.mus[i] - m.mus[i - 1], m.mus[i + 1] - m.mus[i]);
    m.sigmas[0] = m.mus[1] - m.mus[0];
    m.sigmas[n - 1] = m.mus[n - 1] - m.mus[n - 2];
  }
  const double min_sigma = prior_sigma / std::min(100.0, 1.0 + n);
  for (double& s : m.sigmas) s = std::clamp(s, min_sigma, prior_sigma);
  m.sigmas[prior_pos] = prior_sigma;
  const double total = std::accumulate(m.weights.begin(), m.weights.end(), 0.0);
  for (double& w : m.weights) w /= total;
  return m;
}

double normal_cdf(double x, double mu, double sigma) {
  return 0.5 * std::erfc(-(x - mu) / (sigma * M_SQRT2));
}

// A draw from the truncated mixture (rejection, as hyperopt's GMM1).
double sample_mixture(const Mixture& m, Rng& rng) {
  for (int attempt = 0; attempt < 100000; ++attempt) {
    const size_t k = rng.pick(m.weights);
    const double x = m.mus[k] + m.sigmas[k] * rng.normal();
    if (x >= m.low && x <= m.high) return x;
  }
  return std::clamp(m.mus[rng.pick(m.weights)], m.low, m.high);
}

// The log density of the truncated mixture at x; with q > 0, the log of the mass of x's bin
// [x - q/2, x + q/2] (clipped to the bounds), as hyperopt's GMM1_lpdf.
double mixture_log_density(const Mixture& m, double x, double q) {
  double accept = 0;
  for (size_t k = 0; k < m.mus.size(); ++k)
    accept += m.weights[k] * (normal_cdf(m.high, m.mus[k], m.sigmas[k]) -
                              normal_cdf(m.low, m.mus[k], m.sigmas[k]));
  double p = 0;
  if (q > 0) {
    const double lo = std::max(x - q / 2, m.low), hi = std::min(x + q / 2, m.high);
    for (size_t k = 0; k < m.mus.size(); ++k)
      p += m.weights[k] *
           (normal_cdf(hi, m.mus[k], m.sigmas[k]) - normal_cdf(lo, m.mus[k], m.sigmas[k]));
  } else {
    for (size_t k = 0; k < m.mus.size(); ++k) {
      const double z = (x - m.mus[k]) / m.sigmas[k];
      p += m.weights[k] * std::exp(-0.5 * z * z) / (m.sigmas[k] * std::sqrt(2 * M_PI));
    }
  }
  const double tiny = std::numeric_limits<double>::min();
  return std::log(std::max(p, tiny)) - std::log(std::max(accept, tiny));
}

class TpeSearch : public SearchAlgorithm {
 public:
  TpeSearch(const SearchSpace& space, uint64_t seed, TpeOptions o)
      : space_(space), seed_(seed), o_(o) {}

  std::optional<Assignment> propose(size_t index, const std::vector<Observation>& done) override {
    Rng rng(seed_, index);
    Assignment a;
    if (done.size() < std::max<size_t>(1, o_.n_startup)) {
      for (const Parameter& p : space_.params) a.emplace_back(p.name, sample_prior(p, rng));
      return a;
    }
    // The best ceil(gamma * sqrt(n)) trials (at most linear_forgetting) against the rest; ties
    // in loss go to the earlier trial.
    std::vector<size_t> by_loss(done.size());
    std::iota(by_loss.begin(), by_loss.end(), 0);
    std::stable_sort(by_loss.begin(), by_loss.end(),
                     [&](size_t x, size_t y) { return done[x].loss < done[y].loss; });
    const size_t n_below = std::min(
        static_cast<size_t>(std::ceil(o_.gamma * std::sqrt(static_cast<double>(done.size())))),
        o_.linear_forgetting);
    std::vector<bool> is_below(done.size(), false);
    for (size_t r = 0; r < n_below; ++r) is_below[by_loss[r]] = true;
    for (size_t i = 0; i < space_.params.size(); ++i) {
      const Parameter& p = space_.params[i];
      std::vector<nlohmann::json> below, above;  // in time order
      for (size_t t = 0; t < done.size(); ++t)
        (is_below[t] ? below : above).push_back(value_of(done[t], p.name));
      a.emplace_back(p.name, p.kind == Distribution::kChoice ? propose_choice(p, below, above, rng)
                                                             : propose_range(p, below, above, rng));
    }
    return a;
  }

 private:
  static nlohmann::json value_of(const Observation& o, const std::string& name) {
    for (const auto& [n, v] : o.params)
      if (n == name) return v;
    return nullptr;
  }

  // Smoothed, forgetting-weighted counts of each choice (hyperopt's ap_categorical_sampler).
  std::vector<double> choice_probabilities(const Parameter& p,
                                           const std::vector<nlohmann::json>& obs) const {
    std::vector<double> counts(p.values.size(), o_.prior_weight);
    const std::vector<double> w = forgetting_weights(obs.size(), o_.linear_forgetting);
    for (size_t t = 0; t < obs.size(); ++t)
      for (size_t c = 0; c < p.values.size(); ++c)
        if (p.values[c] == obs[t]) counts[c] += w[t];
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    for (double& c : counts) c /= total;
    return counts;
  }

  nlohmann::json propose_choice(const Parameter& p, const std::vector<nlohmann::json>& below,
                                const std::vector<nlohmann::json>& above, Rng& rng) const {
    const std::vector<double> l = choice_probabilities(p, below);
    const std::vector<double> g = choice_probabilities(p, above);
    size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < o_.n_candidates; ++c) {
      const size_t k = rng.pick(l);
      const double score = std::log(l[k]) - std::log(g[k]);
      if (score > best_score) best_score = score, best = k;
    }
    return p.values[best];
  }

  nlohmann::json propose_range(const Parameter& p, const std::vector<nlohmann::json>& below,
                               const std::vector<nlohmann::json>& above, Rng& rng) const {
    const bool log_space = p.kind == Distribution::kLogUniform;
    // hyperopt quantises in value space; here loguniform has no q, so q applies to quniform.
    const double q = p.kind == Distribution::kQUniform ? p.args[2] : 0;
    auto working = [&](const std::vector<nlohmann::json>& values) {
      std::vector<double> xs;
      for (const auto& v : values) {
        if (!v.is_number()) continue;
        const double x = v.get<double>();
        xs.push_back(log_space ? std::log(std::max(x, std::numeric_limits<double>::min())) : x);
      }
      return xs;
    };
    const Mixture l = parzen(working(below), p.args[0], p.args[1], o_);
    const Mixture g = parzen(working(above), p.args[0], p.args[1], o_);
    double best = l.mus[0];
    double best_score = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < o_.n_candidates; ++c) {
      double x = sample_mixture(l, rng);
      if (q > 0) x = std::round(x / q) * q;
      const double score = mixture_log_density(l, x, q) - mixture_log_density(g, x, q);
      if (score > best_score) best_score = score, best = x;
    }
    return continuous_value(p, log_space ? std::exp(best) : best);
  }

  SearchSpace space_;
  uint64_t seed_;
  TpeOptions o_;
};

}  // namespace

std::unique_ptr<SearchAlgorithm> make_tpe(const SearchSpace& space, uint64_t seed,
                                          TpeOptions options) {
  return std::make_unique<TpeSearch>(space, seed, options);
}

std::unique_ptr<SearchAlgorithm> make_search(const std::string& algo, const SearchSpace& space,
                                             uint64_t seed, size_t max_evals) {
  if (algo == "exhaustive") return std::make_unique<ExhaustiveSearch>(space, max_evals);
  if (algo == "random") return std::make_unique<RandomSearch>(space, seed);
  if (algo == "bayes") {
    TpeOptions o;
    o.n_startup = std::max<size_t>(1, std::min<size_t>(20, max_evals / 2));
    return make_tpe(space, seed, o);
  }
  throw ConfigError("--algo: expected exhaustive, random or bayes, got \"" + algo + "\"");
}

size_t planned_trials(const std::string& algo, const SearchSpace& space, size_t max_evals) {
  if (algo != "exhaustive") return max_evals;
  size_t grid = 1;
  for (const Parameter& p : space.params) {
    grid *= std::max<size_t>(1, p.values.size());
    if (grid >= max_evals) return max_evals;
  }
  return grid;
}

}  // namespace recbole::experiment

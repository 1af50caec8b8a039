#pragma once
// The search algorithms of recbole_hyper, behind one interface: each is asked for the
// configuration of the next trial, given the trials that finished so far.
//
//   exhaustive  every combination of the choices (all parameters must be `choice`), in product
//               order: the last parameter of the file varies fastest (Python's
//               itertools.product); capped by max_evals.
//   random      each parameter drawn from its distribution independently (hyperopt's rand).
//   bayes       the tree-structured Parzen estimator, as hyperopt's tpe.suggest: the first
//               min(20, max_evals / 2) trials (at least 1) are random; then the successful trials
//               are split into the ceil(0.25 * sqrt(n)) best (at most 25) and the rest, each
//               parameter gets a Parzen estimator l(x) over the best and g(x) over the rest
//               (truncated Gaussian mixtures with a prior component for ranges, loguniform in
//               log space and quniform by bins of width q; smoothed counts for choices, older
//               trials down-weighted beyond 25), 24 candidates are drawn from l and the one with
//               the largest l(x) / g(x) is taken. Parameters are treated independently, as in
//               hyperopt.
//
// Continuous values are rounded to 6 significant digits (they are passed as text to
// recbole_run; the rounded value is the one recorded); a quniform value is an integer when q and
// low are integers. For a given seed and the same finished trials, every proposal is the same:
// each trial's draws come from a generator seeded by (seed, trial index). With --parallel=1 a
// whole search therefore repeats exactly; in parallel, which trials have finished when a
// proposal is made depends on timing (as in hyperopt).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run/experiment/search_space.h"

namespace recbole::experiment {

// A finished, successful trial: its configuration and its loss (smaller is better: the valid
// score, negated when bigger is better).
struct Observation {
  Assignment params;
  double loss = 0;
};

class SearchAlgorithm {
 public:
  virtual ~SearchAlgorithm() = default;
  // The configuration of trial `index` (0, 1, ...), given the successful trials finished so far
  // in the order they finished; nullopt when the algorithm has nothing more to try.
  virtual std::optional<Assignment> propose(size_t index, const std::vector<Observation>& done) = 0;
};

// Options of the TPE; the defaults are hyperopt's.
struct TpeOptions {
  size_t n_startup = 20;  // random trials before the estimator is used
  double gamma = 0.25;
  size_t n_candidates = 24;
  double prior_weight = 1.0;
  size_t linear_forgetting = 25;
};

// "exhaustive", "random" or "bayes" (ConfigError naming --algo otherwise). max_evals >= 1 caps
// exhaustive search and sets the TPE's random start (min(20, max_evals / 2)).
std::unique_ptr<SearchAlgorithm> make_search(const std::string& algo, const SearchSpace& space,
                                             uint64_t seed, size_t max_evals);

std::unique_ptr<SearchAlgorithm> make_tpe(const SearchSpace& space, uint64_t seed,
                                          TpeOptions options);

// How many trials the search will run: max_evals, or the grid's size when smaller (exhaustive).
size_t planned_trials(const std::string& algo, const SearchSpace& space, size_t max_evals);

}  // namespace recbole::experiment

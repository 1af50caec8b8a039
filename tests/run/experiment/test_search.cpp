// The search algorithms: exhaustive product order, random and TPE determinism per seed, values
// inside their distributions, and the TPE finding the minimum of known functions better than
// random search with the same budget.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "recbole/utils/error.h"
#include "run/experiment/search.h"

using recbole::experiment::Assignment;
using recbole::experiment::Distribution;
using recbole::experiment::Observation;
using recbole::experiment::Parameter;
using recbole::experiment::SearchAlgorithm;
using recbole::experiment::SearchSpace;

namespace {

Parameter choice(const std::string& name, std::vector<nlohmann::json> values) {
  Parameter p;
  p.name = name;
  p.kind = Distribution::kChoice;
  p.values = std::move(values);
  p.where = "test:1";
  return p;
}

Parameter range(const std::string& name, Distribution kind, std::vector<double> args) {
  Parameter p;
  p.name = name;
  p.kind = kind;
  p.args = std::move(args);
  p.where = "test:1";
  return p;
}

// Runs `n` trials one after the other (as --parallel=1 does), each observed with `loss`; returns
// the proposals in order.
std::vector<Assignment> run_sequential(SearchAlgorithm& search, size_t n,
                                       const std::function<double(const Assignment&)>& loss) {
  std::vector<Observation> done;
  std::vector<Assignment> proposals;
  for (size_t i = 0; i < n; ++i) {
    const auto a = search.propose(i, done);
    REQUIRE(a);
    proposals.push_back(*a);
    done.push_back({*a, loss(*a)});
  }
  return proposals;
}

double best_loss(const std::vector<Assignment>& proposals,
                 const std::function<double(const Assignment&)>& loss) {
  double best = INFINITY;
  for (const auto& a : proposals) best = std::min(best, loss(a));
  return best;
}

}  // namespace

TEST_CASE("exhaustive search: every combination in product order, the last parameter fastest") {
  SearchSpace space;
  space.params = {choice("learning_rate", {0.1, 0.01}), choice("embedding_size", {8, 16, 32})};
  auto search = recbole::experiment::make_search("exhaustive", space, 1, 100);
  std::vector<std::pair<double, int>> seen;
  for (size_t i = 0;; ++i) {
    const auto a = search->propose(i, {});
    if (!a) break;
    REQUIRE(a->size() == 2);
    CHECK((*a)[0].first == "learning_rate");
    seen.emplace_back((*a)[0].second.get<double>(), (*a)[1].second.get<int>());
  }
  const std::vector<std::pair<double, int>> expected = {{0.1, 8},  {0.1, 16},  {0.1, 32},
                                                        {0.01, 8}, {0.01, 16}, {0.01, 32}};
  CHECK(seen == expected);
  CHECK(recbole::experiment::planned_trials("exhaustive", space, 100) == 6);
  // max_evals caps the grid.
  CHECK(recbole::experiment::planned_trials("exhaustive", space, 4) == 4);
  auto capped = recbole::experiment::make_search("exhaustive", space, 1, 4);
  CHECK(capped->propose(3, {}));
  CHECK_FALSE(capped->propose(4, {}));
}

TEST_CASE("exhaustive search refuses ranges, and an unknown algorithm is named") {
  SearchSpace space;
  space.params = {choice("embedding_size", {8}),
                  range("learning_rate", Distribution::kLogUniform, {-8, 0})};
  CHECK_THROWS_AS(recbole::experiment::make_search("exhaustive", space, 1, 10),
                  recbole::ConfigError);
  CHECK_THROWS_WITH(recbole::experiment::make_search("grid", space, 1, 10),
                    "--algo: expected exhaustive, random or bayes, got \"grid\"");
}

TEST_CASE("random search: the same proposals for the same seed, inside each distribution") {
  SearchSpace space;
  space.params = {range("learning_rate", Distribution::kLogUniform, {-8, 0}),
                  range("dropout_prob", Distribution::kUniform, {0.1, 0.5}),
                  range("n_layers", Distribution::kQUniform, {1, 4, 1}),
                  range("reg", Distribution::kQUniform, {0, 1, 0.25}),
                  choice("embedding_size", {8, 16, 32})};
  auto a = recbole::experiment::make_search("random", space, 7, 50);
  auto b = recbole::experiment::make_search("random", space, 7, 50);
  auto c = recbole::experiment::make_search("random", space, 8, 50);
  bool any_difference = false;
  std::set<int> layers, sizes;
  for (size_t i = 0; i < 50; ++i) {
    const Assignment x = *a->propose(i, {});
    CHECK(x == *b->propose(i, {}));
    any_difference = any_difference || x != *c->propose(i, {});
    const double lr = x[0].second.get<double>();
    CHECK(lr >= std::exp(-8.0) * (1 - 1e-6));
    CHECK(lr <= 1.0);
    const double dropout = x[1].second.get<double>();
    CHECK(dropout >= 0.1);
    CHECK(dropout <= 0.5);
    REQUIRE(x[2].second.is_number_integer());  // q and low are integers: an int key accepts it
    layers.insert(x[2].second.get<int>());
    const double reg = x[3].second.get<double>();
    CHECK(std::fabs(reg / 0.25 - std::round(reg / 0.25)) < 1e-9);
    sizes.insert(x[4].second.get<int>());
  }
  CHECK(any_difference);
  CHECK(layers == std::set<int>{1, 2, 3, 4});
  CHECK(sizes == std::set<int>{8, 16, 32});
}

TEST_CASE("TPE: the same seed and history give the same proposals, another seed others") {
  SearchSpace space;
  space.params = {range("x", Distribution::kUniform, {-10, 10}),
                  range("lr", Distribution::kLogUniform, {-8, 0}),
                  range("n", Distribution::kQUniform, {1, 8, 1}), choice("c", {"a", "b", "c"})};
  auto loss = [](const Assignment& a) {
    return std::pow(a[0].second.get<double>() - 3, 2) +
           std::fabs(std::log(a[1].second.get<double>()) + 4) + a[2].second.get<double>() +
           (a[3].second == "b" ? 0.0 : 1.0);
  };
  recbole::experiment::TpeOptions o;
  o.n_startup = 5;
  auto a = recbole::experiment::make_tpe(space, 11, o);
  auto b = recbole::experiment::make_tpe(space, 11, o);
  auto c = recbole::experiment::make_tpe(space, 12, o);
  const auto pa = run_sequential(*a, 30, loss);
  CHECK(pa == run_sequential(*b, 30, loss));
  CHECK(pa != run_sequential(*c, 30, loss));
  for (const auto& x : pa) {
    CHECK(x[0].second.get<double>() >= -10);
    CHECK(x[0].second.get<double>() <= 10);
    REQUIRE(x[2].second.is_number_integer());
    CHECK(x[2].second.get<int>() >= 1);
    CHECK(x[2].second.get<int>() <= 8);
  }
}

TEST_CASE("TPE minimises (x-3)^2 over uniform(-10,10) far better than random search") {
  SearchSpace space;
  space.params = {range("x", Distribution::kUniform, {-10, 10})};
  auto loss = [](const Assignment& a) { return std::pow(a[0].second.get<double>() - 3, 2); };
  constexpr int kSeeds = 10;
  constexpr size_t kTrials = 50;
  double tpe_sum = 0, random_sum = 0;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    // make_search("bayes") with 50 trials: 20 random ones first, as hyperopt.
    auto tpe = recbole::experiment::make_search("bayes", space, seed, kTrials);
    auto rnd = recbole::experiment::make_search("random", space, seed + 1000, kTrials);
    const double t = best_loss(run_sequential(*tpe, kTrials, loss), loss);
    const double r = best_loss(run_sequential(*rnd, kTrials, loss), loss);
    tpe_sum += t;
    random_sum += r;
  }
  INFO("mean best loss: TPE " << tpe_sum / kSeeds << ", random " << random_sum / kSeeds);
  // Random search's expected best is ~0.08 (the nearest of 50 points to 3: ~0.2 away).
  CHECK(tpe_sum / kSeeds < 0.03);
  CHECK(tpe_sum < 0.25 * random_sum);
}

TEST_CASE("TPE concentrates on the best choice of a categorical parameter") {
  std::vector<nlohmann::json> values;
  for (int v = 0; v < 10; ++v) values.push_back(v);
  SearchSpace space;
  space.params = {choice("k", values)};
  auto loss = [](const Assignment& a) { return std::fabs(a[0].second.get<double>() - 7); };
  int tpe_hits = 0, random_hits = 0;
  for (int seed = 1; seed <= 5; ++seed) {
    auto tpe = recbole::experiment::make_search("bayes", space, seed, 60);
    auto rnd = recbole::experiment::make_search("random", space, seed, 60);
    const auto pt = run_sequential(*tpe, 60, loss);
    const auto pr = run_sequential(*rnd, 60, loss);
    // After the 20 random start trials.
    for (size_t i = 20; i < 60; ++i) {
      tpe_hits += pt[i][0].second == 7 ? 1 : 0;
      random_hits += pr[i][0].second == 7 ? 1 : 0;
    }
  }
  INFO("proposals of the best value among 200: TPE " << tpe_hits << ", random " << random_hits);
  CHECK(tpe_hits > 2 * random_hits);
}

TEST_CASE("TPE on a loguniform learning rate proposes near the optimum more often than random") {
  SearchSpace space;
  space.params = {range("learning_rate", Distribution::kLogUniform, {-10, 0})};
  // Best at 1e-3, measured in decades; the range spans 4.3 decades.
  auto loss = [](const Assignment& a) {
    return std::fabs(std::log10(a[0].second.get<double>()) + 3);
  };
  int tpe_near = 0, random_near = 0;  // proposals within half a decade, after the random start
  for (int seed = 1; seed <= 10; ++seed) {
    auto tpe = recbole::experiment::make_search("bayes", space, seed, 40);
    auto rnd = recbole::experiment::make_search("random", space, seed, 40);
    const auto pt = run_sequential(*tpe, 40, loss);
    const auto pr = run_sequential(*rnd, 40, loss);
    for (size_t i = 20; i < 40; ++i) {
      tpe_near += loss(pt[i]) < 0.5 ? 1 : 0;
      random_near += loss(pr[i]) < 0.5 ? 1 : 0;
    }
  }
  INFO("proposals within half a decade among 200: TPE " << tpe_near << ", random " << random_near);
  CHECK(tpe_near > 1.5 * random_near);
}

// Value metrics (the labeled mode) on hand-made (score, label) rows whose values are worked out
// in the comments.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "recbole/config/metric_registry.h"
#include "recbole/evaluator/metrics.h"
#include "recbole/evaluator/value_metrics.h"
#include "recbole/utils/error.h"

using namespace recbole::evaluator;

namespace {

ValueRecords rows(std::vector<float> scores, std::vector<float> labels) {
  ValueRecords r;
  r.scores = std::move(scores);
  r.labels = std::move(labels);
  return r;
}

}  // namespace

TEST_CASE("AUC counts pairs ranked right, tied pairs as one half", "[value_metrics]") {
  // Positives 0.9, 0.8, 0.1; negatives 0.8, 0.3, 0.3. Pairs ranked right: 0.9 beats all three
  // negatives (3), 0.8 beats both 0.3 (2) and ties the negative 0.8 (1/2), 0.1 beats none:
  // 5.5 of 9 pairs. Mann-Whitney check: ascending average ranks 0.1 -> 1, 0.3 -> 2.5, 0.8 -> 4.5,
  // 0.9 -> 6; positives' ranks 1 + 4.5 + 6 = 11.5; (11.5 - 3*4/2) / (3*3) = 5.5 / 9.
  const ValueRecords r = rows({0.3f, 0.8f, 0.1f, 0.9f, 0.3f, 0.8f}, {0, 1, 1, 1, 0, 0});
  CHECK(auc(r) == Approx(5.5 / 9).epsilon(1e-12));
  // The order of the rows does not matter.
  CHECK(auc(rows({0.9f, 0.8f, 0.8f, 0.3f, 0.3f, 0.1f}, {1, 0, 1, 0, 0, 1})) == auc(r));

  CHECK(auc(rows({0.9f, 0.7f, 0.2f, 0.1f}, {1, 1, 0, 0})) == 1.0);
  CHECK(auc(rows({0.9f, 0.7f, 0.2f, 0.1f}, {0, 0, 1, 1})) == 0.0);
  CHECK(auc(rows({0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, {1, 0, 0, 1, 0})) == 0.5);  // all tied
  // Only a label of exactly 1 is a positive: 0.5 and 2 count as negatives. Positive 0.6 beats
  // 0.2 (label 0) and 0.4 (label 0.5), loses to 0.9 (label 2): 2 of 3.
  CHECK(auc(rows({0.6f, 0.2f, 0.4f, 0.9f}, {1, 0, 0.5f, 2})) == Approx(2.0 / 3).epsilon(1e-12));
}

TEST_CASE("AUC equals the count over every (positive, negative) pair, ties and signs included",
          "[value_metrics]") {
  // Scores from a small set (ties everywhere) spanning negative, ±0, tiny, huge and infinite
  // values: the sort by score must order them as floats, with −0 tied to +0.
  const std::vector<float> values = {-INFINITY, -3.0e38f, -2.0f, -1e-30f, -0.0f, 0.0f,
                                     1e-38f,    0.25f,    0.5f,  3.0f,    1e30f, INFINITY};
  std::mt19937 gen(11);
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t n = 50 + 97 * static_cast<size_t>(trial);
    std::vector<float> scores(n), labels(n);
    for (size_t i = 0; i < n; ++i) {
      scores[i] = values[pick(gen)];
      labels[i] = (gen() % 3 == 0) ? 1.0f : 0.0f;
    }
    double twice = 0.0, pos = 0.0, neg = 0.0;
    for (size_t i = 0; i < n; ++i) {
      if (labels[i] != 1.0f) {
        neg += 1;
        continue;
      }
      pos += 1;
      for (size_t j = 0; j < n; ++j)
        if (labels[j] != 1.0f) twice += scores[i] > scores[j] ? 2 : scores[i] == scores[j] ? 1 : 0;
    }
    CHECK(auc(rows(scores, labels)) == Approx(twice / (2 * pos * neg)).epsilon(1e-12));
  }
}

TEST_CASE("AUC with one class only is undefined (NaN), as in RecBole", "[value_metrics]") {
  CHECK(std::isnan(auc(rows({0.9f, 0.2f}, {1, 1}))));  // no negative
  CHECK(std::isnan(auc(rows({0.9f, 0.2f}, {0, 0}))));  // no positive
  CHECK(std::isnan(auc(rows({}, {}))));
  CHECK(std::isnan(auc(rows({0.9f, NAN}, {1, 0}))));
  // NaN survives rounding, so a result file shows null rather than a number.
  const auto m = compute_value_metrics({"AUC", "MAE"}, rows({0.9f, 0.2f}, {1, 1}), 4);
  REQUIRE(m.size() == 2);
  CHECK(std::isnan(m[0].second));
  CHECK(m[1].second == 0.45);  // (0.1 + 0.8) / 2
}

TEST_CASE("LogLoss, MAE and RMSE", "[value_metrics]") {
  // -(ln 0.8 + ln 0.6) / 2 = (0.2231436 + 0.5108256) / 2 = 0.3669846.
  CHECK(log_loss(rows({0.8f, 0.4f}, {1, 0})) == Approx(0.3669846).epsilon(1e-6));
  // Scores are clipped to [1e-15, 1 - 1e-15]: -ln(1e-15) = 34.5387764 for a positive scored 0;
  // a negative scored 1 costs -ln(1 - (1 - 1e-15)) = 34.5395760 (1 - 1e-15 rounds in float64).
  CHECK(log_loss(rows({0.0f}, {1})) == Approx(34.5387764).epsilon(1e-8));
  CHECK(log_loss(rows({1.0f}, {0})) == Approx(34.5395760).epsilon(1e-8));
  // Soft labels are used as given: (ln 2 + (-0.5 ln 0.9 - 0.5 ln 0.1)) / 2 = 0.9485599.
  CHECK(log_loss(rows({0.5f, 0.9f}, {0.5f, 0.5f})) == Approx(0.9485599).epsilon(1e-6));

  const ValueRecords r = rows({0.8f, 0.4f, 0.5f}, {1, 0, 1});
  CHECK(mean_absolute_error(r) == Approx(1.1 / 3).epsilon(1e-6));  // (0.2 + 0.4 + 0.5) / 3
  CHECK(root_mean_squared_error(r) == Approx(std::sqrt(0.15)).epsilon(1e-6));  // (.04+.16+.25)/3

  CHECK(std::isnan(log_loss(rows({}, {}))));
  CHECK(std::isnan(mean_absolute_error(rows({}, {}))));
  CHECK(std::isnan(root_mean_squared_error(rows({}, {}))));
}

TEST_CASE("compute_value_metrics: order, keys, rounding", "[value_metrics]") {
  const ValueRecords r = rows({0.3f, 0.8f, 0.1f, 0.9f, 0.3f, 0.8f}, {0, 1, 1, 1, 0, 0});
  const auto m = compute_value_metrics({"logloss", "AUC", "rmse", "Mae", "auc"}, r, 4);
  std::vector<std::string> keys;
  for (const auto& kv : m) keys.push_back(kv.first);
  CHECK(keys == std::vector<std::string>{"logloss", "auc", "rmse", "mae"});
  CHECK(m[1].second == 0.6111);  // 5.5 / 9, rounded like Python's round(x, 4)
  CHECK(m[0].second == python_round(log_loss(r), 4));
  CHECK(m[2].second == python_round(root_mean_squared_error(r), 4));
  CHECK(m[3].second == python_round(mean_absolute_error(r), 4));
  // MAE: (0.3 + 0.2 + 0.9 + 0.1 + 0.3 + 0.8) / 6 = 0.4333...
  CHECK(m[3].second == 0.4333);
  CHECK(compute_value_metrics({"LogLoss"}, rows({1.0f, 0.0f}, {0, 1}), 2)[0].second == 34.54);
}

TEST_CASE("compute_value_metrics reports wrong metrics and records", "[value_metrics][errors]") {
  const ValueRecords r = rows({0.5f}, {1});
  CHECK_THROWS_AS(compute_value_metrics({"AUC", "Foo"}, r, 4), recbole::ConfigError);
  CHECK_THROWS_WITH(compute_value_metrics({"Foo"}, r, 4),
                    Catch::Contains("\"Foo\"") && Catch::Contains("AUC, LogLoss, MAE, RMSE"));
  CHECK_THROWS_WITH(compute_value_metrics({"AUC", "Recall"}, r, 4),
                    Catch::Contains("Recall is a ranking metric"));
  CHECK_THROWS_AS(compute_value_metrics({"AUC"}, r, -1), recbole::ConfigError);
  ValueRecords bad = r;
  bad.labels.push_back(0);
  CHECK_THROWS_AS(compute_value_metrics({"AUC"}, bad, 4), std::invalid_argument);
  CHECK_THROWS_AS(auc(bad), std::invalid_argument);
}

TEST_CASE("ValueRecords::append concatenates rows", "[value_metrics]") {
  ValueRecords all = rows({0.9f, 0.2f}, {1, 0});
  all.append(rows({0.4f}, {1}));
  CHECK(all.size() == 3);
  CHECK(all.scores == std::vector<float>{0.9f, 0.2f, 0.4f});
  CHECK(all.labels == std::vector<float>{1, 0, 1});
}

TEST_CASE("every registered metric has a formula", "[value_metrics][metrics]") {
  // A registry row without a formula throws std::logic_error at the first use.
  RankingRecords ranking;
  ranking.max_k = 1;
  ranking.topk_items = {1};
  ranking.hits = {1};
  ranking.pos_len = {1};
  ranking.pos_rank_sum = {1};
  ranking.user_len = {2};
  MetricContext ctx;
  ctx.n_items = 2;
  ctx.item_train_count = {0, 3};
  CHECK_NOTHROW(compute_metrics(ranking_metric_names(), {1}, ranking, ctx, 4));
  CHECK(compute_metrics(ranking_metric_names(), {1}, ranking, ctx, 4).size() ==
        ranking_metric_names().size());
  CHECK(compute_value_metrics(value_metric_names(), rows({0.5f, 0.4f}, {1, 0}), 4).size() ==
        value_metric_names().size());
  CHECK(ranking_metric_names().size() + value_metric_names().size() == metric_registry().size());
}

TEST_CASE("AUC, GAUC and LogLoss of the labeled mode by hand, ties and one-class users",
          "[value_metrics][gauc]") {
  // user 1: (0.9, 1) (0.5, 0) (0.5, 1) (0.2, 0): 0.9 beats both negatives (2), the positive 0.5
  //   ties the negative 0.5 (1/2) and beats 0.2 (1): 3.5 / 4 = 0.875, weight 2 positives.
  //   RecBole's rank form: descending mid-ranks 1, 2.5, 2.5, 4; n 4, P 2:
  //   ((4 + 1)·2 − 2·3/2 − (1 + 2.5)) / (2·2) = 3.5 / 4.
  // user 2: (0.3, 1) (0.6, 0) (0.1, 0): 1 of 2 pairs: 0.5, weight 1.
  // user 3: (0.7, 1) (0.4, 1): positives only — left out. user 4: (0.8, 0): negatives only.
  // GAUC = (2·0.875 + 1·0.5) / 3 = 0.75.
  ValueRecords r = rows({0.9f, 0.5f, 0.5f, 0.2f, 0.3f, 0.6f, 0.1f, 0.7f, 0.4f, 0.8f},
                        {1, 0, 1, 0, 1, 0, 0, 1, 1, 0});
  r.users = {1, 1, 1, 1, 2, 2, 2, 3, 3, 4};
  CHECK(gauc(r) == Approx(0.75).epsilon(1e-12));
  // Global AUC: positives 0.9 (beats 5), 0.5 (ties 1, beats 2: 2.5), 0.3 (2), 0.7 (4), 0.4 (2):
  // 15.5 of 25 pairs.
  CHECK(auc(r) == Approx(15.5 / 25).epsilon(1e-12));
  double ll = 0;
  for (size_t i = 0; i < r.scores.size(); ++i)
    ll += r.labels[i] == 1 ? -std::log(static_cast<double>(r.scores[i]))
                           : -std::log(1.0 - static_cast<double>(r.scores[i]));
  CHECK(log_loss(r) == Approx(ll / 10).epsilon(1e-12));

  // GAUC beside the value metrics (RecBole cannot): keys in the order asked.
  const auto values = compute_value_metrics({"AUC", "GAUC", "LogLoss"}, r, 4);
  REQUIRE(values.size() == 3);
  CHECK(values[1].first == "gauc");
  CHECK(values[1].second == 0.75);
  CHECK(values[0].second == 0.62);

  // Every user one-class: NaN. No users collected: an error, not a silent value.
  ValueRecords one = rows({0.9f, 0.1f}, {1, 0});
  one.users = {1, 2};
  CHECK(std::isnan(gauc(one)));
  CHECK_THROWS_AS(gauc(rows({0.9f, 0.1f}, {1, 0})), std::invalid_argument);
  // The row order does not matter.
  ValueRecords shuffled = rows({0.8f, 0.1f, 0.5f, 0.4f, 0.9f, 0.6f, 0.2f, 0.7f, 0.3f, 0.5f},
                               {0, 0, 1, 1, 1, 0, 0, 1, 1, 0});
  shuffled.users = {4, 2, 1, 3, 1, 2, 1, 3, 2, 1};
  CHECK(gauc(shuffled) == Approx(0.75).epsilon(1e-12));
}

// Metric formulas against RecBole's own golden vectors (tests/metrics/test_topk_metrics.py and
// test_rank_metrics.py) and hand-checked cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "recbole/evaluator/metrics.h"
#include "recbole/utils/error.h"

using recbole::evaluator::compute_metrics;
using recbole::evaluator::MetricContext;
using recbole::evaluator::RankingRecords;

namespace {

constexpr int kExact = 15;  // decimal places that keep every value below exact to ~1e-15

// Records from a 0/1 hit matrix; items are arbitrary distinct valid ids (unused by these metrics).
RankingRecords from_hits(const std::vector<std::vector<int>>& hit_rows,
                         const std::vector<int32_t>& pos_len) {
  RankingRecords r;
  r.max_k = static_cast<int>(hit_rows.at(0).size());
  for (size_t u = 0; u < hit_rows.size(); ++u) {
    for (int j = 0; j < r.max_k; ++j) {
      r.topk_items.push_back(j + 1);
      r.hits.push_back(static_cast<uint8_t>(hit_rows[u][j]));
    }
    r.pos_len.push_back(pos_len[u]);
  }
  return r;
}

// Records from a matrix of recommended items (hits all 0, one positive each).
RankingRecords from_items(const std::vector<std::vector<int32_t>>& item_rows) {
  RankingRecords r;
  r.max_k = static_cast<int>(item_rows.at(0).size());
  for (const auto& row : item_rows) {
    for (int32_t item : row) {
      r.topk_items.push_back(item);
      r.hits.push_back(0);
    }
    r.pos_len.push_back(1);
  }
  return r;
}

std::map<std::string, double> as_map(const std::vector<std::pair<std::string, double>>& v) {
  return {v.begin(), v.end()};
}

RankingRecords row_of(const RankingRecords& r, int64_t u) {
  RankingRecords one;
  one.max_k = r.max_k;
  one.topk_items.assign(r.topk_items.begin() + u * r.max_k,
                        r.topk_items.begin() + (u + 1) * r.max_k);
  one.hits.assign(r.hits.begin() + u * r.max_k, r.hits.begin() + (u + 1) * r.max_k);
  one.pos_len = {r.pos_len[u]};
  return one;
}

// Checks a per-user metric against a golden [n_users][max_k] matrix, user by user (a one-user
// record set averages nothing) and as the mean over all users.
void check_per_user(const std::string& metric, const RankingRecords& records,
                    const MetricContext& ctx, const std::vector<std::vector<double>>& golden) {
  std::vector<int64_t> ks;
  for (int k = 1; k <= records.max_k; ++k) ks.push_back(k);
  for (int64_t u = 0; u < records.n_users(); ++u) {
    const auto got = compute_metrics({metric}, ks, row_of(records, u), ctx, kExact);
    REQUIRE(got.size() == ks.size());
    for (int k = 1; k <= records.max_k; ++k) {
      INFO(metric << " user " << u << " k " << k);
      CHECK(got[k - 1].second == Approx(golden[u][k - 1]).margin(1e-14));
    }
  }
  const auto all = compute_metrics({metric}, ks, records, ctx, kExact);
  for (int k = 1; k <= records.max_k; ++k) {
    double mean = 0;
    for (const auto& row : golden) mean += row[k - 1];
    mean /= static_cast<double>(golden.size());
    INFO(metric << " mean k " << k);
    CHECK(all[k - 1].second == Approx(mean).margin(1e-14));
  }
}

// RecBole's test_topk_metrics.py fixtures.
const std::vector<std::vector<int>> kPosIdx = {{0, 0, 0}, {1, 1, 1}, {1, 0, 1}, {0, 0, 1}};
const std::vector<int32_t> kPosLen = {1, 3, 4, 2};
const std::vector<std::vector<int32_t>> kItemMatrix = {
    {5, 7, 3}, {4, 5, 2}, {2, 3, 5}, {1, 4, 6}, {5, 3, 7}};

MetricContext golden_context() {
  MetricContext ctx;
  ctx.n_items = 8;
  ctx.item_train_count = {0, 0, 1, 2, 3, 4, 5, 0};  // {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5}
  return ctx;
}

}  // namespace

TEST_CASE("golden top-k hit metrics from RecBole's test_topk_metrics", "[metrics]") {
  const RankingRecords r = from_hits(kPosIdx, kPosLen);
  const MetricContext ctx;
  const double l2 = 1 / std::log2(2.0), l3 = 1 / std::log2(3.0), l4 = 1 / std::log2(4.0);
  check_per_user("hit", r, ctx, {{0, 0, 0}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}});
  check_per_user("ndcg", r, ctx,
                 {{0, 0, 0},
                  {1, 1, 1},
                  {1, l2 / (l2 + l3), (l2 + l4) / (l2 + l3 + l4)},
                  {0, 0, l4 / (l2 + l3)}});
  check_per_user("mrr", r, ctx, {{0, 0, 0}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1.0 / 3}});
  check_per_user("map", r, ctx,
                 {{0, 0, 0},
                  {1, 1, 1},
                  {1, 1.0 / 2, (1.0 / 3) * (1.0 / 1 + 2.0 / 3)},
                  {0, 0, (1.0 / 3) * (1.0 / 2)}});
  check_per_user("recall", r, ctx,
                 {{0, 0, 0}, {1.0 / 3, 2.0 / 3, 1}, {1.0 / 4, 1.0 / 4, 2.0 / 4}, {0, 0, 1.0 / 2}});
  check_per_user("precision", r, ctx,
                 {{0, 0, 0}, {1, 1, 1}, {1, 1.0 / 2, 2.0 / 3}, {0, 0, 1.0 / 3}});
}

TEST_CASE("golden item metrics from RecBole's test_topk_metrics", "[metrics]") {
  const RankingRecords r = from_items(kItemMatrix);
  const MetricContext ctx = golden_context();
  const auto at3 =
      as_map(compute_metrics({"ItemCoverage", "GiniIndex", "ShannonEntropy"}, {3}, r, ctx, kExact));
  CHECK(at3.at("itemcoverage@3") == Approx(7.0 / 8).margin(1e-14));
  CHECK(at3.at("giniindex@3") ==
        Approx(((-7) * 0 + (-5) * 1 + (-3) * 1 + (-1) * 2 + 1 * 2 + 3 * 2 + 5 * 3 + 7 * 4) /
               (8.0 * (3 * 5)))
            .margin(1e-14));
  auto plogp = [](double p) { return p * std::log(p); };
  const double entropy = -(plogp(1 / 15.) + plogp(2 / 15.) + plogp(3 / 15.) + plogp(2 / 15.) +
                           plogp(4 / 15.) + plogp(1 / 15.) + plogp(2 / 15.)) /
                         7;
  CHECK(at3.at("shannonentropy@3") == Approx(entropy).margin(1e-14));
  check_per_user("averagepopularity", r, ctx,
                 {{4 / 1., 4 / 2., 6 / 3.},
                  {3 / 1., 7 / 2., 8 / 3.},
                  {1 / 1., 3 / 2., 7 / 3.},
                  {0 / 1., 3 / 2., 8 / 3.},
                  {4 / 1., 6 / 2., 6 / 3.}});
}

TEST_CASE("item metrics at smaller k use only the first k columns", "[metrics]") {
  const RankingRecords r = from_items(kItemMatrix);
  const auto m = as_map(compute_metrics({"itemcoverage", "giniindex", "shannonentropy"}, {1}, r,
                                        golden_context(), kExact));
  // First column: 5, 4, 2, 1, 5 -> counts {5: 2, 4: 1, 2: 1, 1: 1}, 5 slots, 4 distinct, n = 8.
  CHECK(m.at("itemcoverage@1") == Approx(4.0 / 8).margin(1e-14));
  CHECK(m.at("giniindex@1") == Approx((1 * 1 + 3 * 1 + 5 * 1 + 7 * 2) / 5.0 / 8).margin(1e-14));
  const double h = -(0.4 * std::log(0.4) + 3 * 0.2 * std::log(0.2)) / 4;
  CHECK(m.at("shannonentropy@1") == Approx(h).margin(1e-14));
}

TEST_CASE("TailPercentage follows RecBole's tail set rules", "[metrics]") {
  // RecBole's golden dict lists item 1 with count 0, which a training Counter never holds; here a
  // count of 0 means "absent from the training split", so the counter is {2:1, 3:2, 4:3, 5:4, 6:5}.
  const RankingRecords r = from_items(kItemMatrix);
  MetricContext ctx = golden_context();
  SECTION("ratio <= 1: first max(int(len * ratio), 1) items by (count, id)") {
    ctx.tail_ratio = 0.1;  // int(5 * 0.1) = 0 -> 1 item: {2}
    check_per_user("tailpercentage", r, ctx,
                   {{0, 0, 0}, {0, 0, 1 / 3.}, {1, 1 / 2., 1 / 3.}, {0, 0, 0}, {0, 0, 0}});
  }
  SECTION("ratio <= 0 falls back to 0.1") {
    ctx.tail_ratio = 0;
    check_per_user("tailpercentage", r, ctx,
                   {{0, 0, 0}, {0, 0, 1 / 3.}, {1, 1 / 2., 1 / 3.}, {0, 0, 0}, {0, 0, 0}});
  }
  SECTION("ratio 0.4: two items, ties broken by id") {
    ctx.tail_ratio = 0.4;
    ctx.item_train_count = {0, 0, 1, 1, 3, 4, 5, 0};  // 2 and 3 tie at 1; int(5 * 0.4) = 2
    check_per_user(
        "tailpercentage", r, ctx,
        {{0, 0, 1 / 3.}, {0, 0, 1 / 3.}, {1, 1, 2 / 3.}, {0, 0, 0}, {0, 1 / 2., 1 / 3.}});
    ctx.item_train_count = {0, 0, 1, 1, 1, 4, 5, 0};  // 2, 3, 4 tie: the two lowest ids win
    check_per_user(
        "tailpercentage", r, ctx,
        {{0, 0, 1 / 3.}, {0, 0, 1 / 3.}, {1, 1, 2 / 3.}, {0, 0, 0}, {0, 1 / 2., 1 / 3.}});
  }
  SECTION("ratio > 1: items of the counter with count <= ratio") {
    ctx.tail_ratio = 2;  // {2, 3}; item 1 (count 0) is not in the counter
    check_per_user(
        "tailpercentage", r, ctx,
        {{0, 0, 1 / 3.}, {0, 0, 1 / 3.}, {1, 1, 2 / 3.}, {0, 0, 0}, {0, 1 / 2., 1 / 3.}});
  }
}

TEST_CASE("golden GAUC from RecBole's test_rank_metrics", "[metrics][gauc]") {
  RankingRecords r;
  r.max_k = 0;
  SECTION("case 0") {
    r.pos_rank_sum = {1, 4, 9};
    r.user_len = {2, 3, 5};
    r.pos_len = {1, 2, 3};
    const double expected = (1 * ((2 - (1 - 1) / 2.0 - 1 / 1.0) / (2 - 1)) +
                             2 * ((3 - (2 - 1) / 2.0 - 4 / 2.0) / (3 - 2)) +
                             3 * ((5 - (3 - 1) / 2.0 - 9 / 3.0) / (5 - 3))) /
                            (1 + 2 + 3);
    const auto m = compute_metrics({"GAUC"}, {10}, r, {}, kExact);
    REQUIRE(m.size() == 1);
    CHECK(m[0].first == "gauc");
    CHECK(m[0].second == Approx(expected).margin(1e-14));
  }
  SECTION("case 1: users without positives or without negatives are dropped") {
    r.pos_rank_sum = {3, 0, 6};
    r.user_len = {3, 6, 4};
    r.pos_len = {1, 0, 4};
    const auto m = compute_metrics({"gauc"}, {10}, r, {}, kExact);
    CHECK(m.at(0).second == Approx((3 - 0 - 3 / 1.0) / (3 - 1)).margin(1e-14));
  }
  SECTION("no user left gives NaN") {
    r.pos_rank_sum = {0};
    r.user_len = {3};
    r.pos_len = {0};
    CHECK(std::isnan(compute_metrics({"gauc"}, {10}, r, {}, 4).at(0).second));
  }
}

TEST_CASE("a user with fewer than K candidates: -1 slots are misses and recommend nothing",
          "[metrics]") {
  RankingRecords r;
  r.max_k = 3;
  r.topk_items = {3, -1, -1, /**/ 3, 4, 5};
  r.hits = {1, 0, 0, /**/ 0, 1, 0};
  r.pos_len = {1, 2};
  MetricContext ctx;
  ctx.n_items = 6;
  ctx.item_train_count = {0, 0, 0, 6, 3, 9};
  const auto m = as_map(compute_metrics({"precision", "recall", "hit", "itemcoverage",
                                         "averagepopularity", "giniindex", "shannonentropy"},
                                        {3}, r, ctx, kExact));
  CHECK(m.at("precision@3") == Approx((1 / 3. + 1 / 3.) / 2).margin(1e-14));
  CHECK(m.at("recall@3") == Approx((1 + 1 / 2.) / 2).margin(1e-14));
  CHECK(m.at("hit@3") == 1);
  CHECK(m.at("itemcoverage@3") == Approx(3 / 6.).margin(1e-14));  // {3, 4, 5}
  CHECK(m.at("averagepopularity@3") == Approx((6 / 3. + 18 / 3.) / 2).margin(1e-14));
  // Counts over the 4 filled slots: 3 -> 2, 4 -> 1, 5 -> 1; n = 6, positions 4..6.
  CHECK(m.at("giniindex@3") == Approx((1 * 1 + 3 * 1 + 5 * 2) / 4. / 6).margin(1e-14));
  const double h = -(0.5 * std::log(0.5) + 2 * 0.25 * std::log(0.25)) / 3;
  CHECK(m.at("shannonentropy@3") == Approx(h).margin(1e-14));
}

TEST_CASE("MAP and NDCG normalise by min(k, P)", "[metrics]") {
  const RankingRecords r = from_hits({{1, 1, 0, 1}}, {6});
  const auto m = as_map(compute_metrics({"map", "ndcg"}, {1, 2, 3, 4}, r, {}, kExact));
  CHECK(m.at("map@1") == Approx(1).margin(1e-14));
  CHECK(m.at("map@2") == Approx(1).margin(1e-14));
  CHECK(m.at("map@3") == Approx(2 / 3.).margin(1e-14));
  CHECK(m.at("map@4") == Approx((1 + 1 + 3 / 4.) / 4).margin(1e-14));
  CHECK(m.at("ndcg@3") == Approx((1 + 1 / std::log2(3.)) / (1 + 1 / std::log2(3.) + 0.5)));
  // P = 1 < k: the ideal holds a single hit at rank 1.
  const RankingRecords late = from_hits({{0, 0, 1}}, {1});
  const auto n = as_map(compute_metrics({"ndcg", "map"}, {3}, late, {}, kExact));
  CHECK(n.at("ndcg@3") == Approx(0.5).margin(1e-14));
  CHECK(n.at("map@3") == Approx(1 / 3.).margin(1e-14));
}

TEST_CASE("values are rounded like Python's round()", "[metrics][round]") {
  using recbole::evaluator::python_round;
  CHECK(python_round(0.125, 2) == 0.12);  // exact tie: to even
  CHECK(python_round(0.375, 2) == 0.38);
  CHECK(python_round(2.675, 2) == 2.67);  // 2.675 is stored below the tie
  CHECK(python_round(0.5, 0) == 0.0);
  CHECK(python_round(1.5, 0) == 2.0);
  CHECK(python_round(0.33335, 4) == 0.3333);  // stored as 0.333349999...
  CHECK(python_round(1.0 / 3, 4) == 0.3333);
  CHECK(std::signbit(python_round(-0.00004, 4)));
  CHECK(std::isnan(python_round(std::nan(""), 4)));

  const RankingRecords r = from_hits({{0, 1, 0}, {0, 0, 0}, {1, 0, 0}}, {1, 1, 1});
  const auto m4 = compute_metrics({"recall"}, {2}, r, {}, 4);
  CHECK(m4.at(0).second == 0.6667);
  const auto m1 = compute_metrics({"mrr"}, {3}, r, {}, 1);
  CHECK(m1.at(0).second == 0.5);  // (1/2 + 0 + 1) / 3 = 0.5
  const auto m2 = compute_metrics({"mrr"}, {2}, r, {}, 2);
  CHECK(m2.at(0).second == 0.5);
  CHECK_THROWS_AS(compute_metrics({"mrr"}, {2}, r, {}, -1), recbole::ConfigError);
}

TEST_CASE("keys are lowercase, ordered metrics then topk, without repeats", "[metrics]") {
  RankingRecords r = from_hits({{0, 1, 0}, {1, 0, 0}}, {1, 2});
  r.pos_rank_sum = {2, 1};
  r.user_len = {10, 10};
  const auto m = compute_metrics({"NDCG", "GAUC", "recall", "Hit", "ndcg"}, {3, 1, 3}, r, {}, 4);
  std::vector<std::string> keys;
  for (const auto& kv : m) keys.push_back(kv.first);
  CHECK(keys == std::vector<std::string>{"ndcg@3", "ndcg@1", "gauc", "recall@3", "recall@1",
                                         "hit@3", "hit@1"});
}

TEST_CASE("unknown metrics and bad arguments are reported", "[metrics][errors]") {
  const RankingRecords r = from_hits({{0, 1}}, {1});
  try {
    compute_metrics({"Recall", "Foo"}, {1}, r, {}, 4);
    FAIL("expected ConfigError");
  } catch (const recbole::ConfigError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("\"Foo\""));
    CHECK(msg ==
          "metrics: unknown metric \"Foo\"; known metrics: Recall, MRR, NDCG, Hit, Precision, "
          "MAP, GAUC, ItemCoverage, AveragePopularity, GiniIndex, ShannonEntropy, TailPercentage");
  }
  CHECK_THROWS_WITH(compute_metrics({"AUC"}, {1}, r, {}, 4),
                    Catch::Contains("AUC is a value metric") && Catch::Contains("ranked lists"));
  CHECK_THROWS_AS(compute_metrics({"recall"}, {0}, r, {}, 4), recbole::ConfigError);
  CHECK_THROWS_AS(compute_metrics({"recall"}, {3}, r, {}, 4), std::invalid_argument);
  CHECK_THROWS_AS(compute_metrics({"gauc"}, {1}, r, {}, 4), std::invalid_argument);
  MetricContext small;
  small.n_items = 2;  // item ids 1, 2 are recommended: 2 is out of range
  CHECK_THROWS_AS(compute_metrics({"itemcoverage"}, {2}, r, small, 4), std::invalid_argument);
  RankingRecords bad = r;
  bad.hits.pop_back();
  CHECK_THROWS_AS(compute_metrics({"hit"}, {1}, bad, {}, 4), std::invalid_argument);
}

TEST_CASE("registry queries", "[metrics]") {
  using namespace recbole::evaluator;
  CHECK(ranking_metric_names() ==
        std::vector<std::string>{"Recall", "MRR", "NDCG", "Hit", "Precision", "MAP", "GAUC",
                                 "ItemCoverage", "AveragePopularity", "GiniIndex", "ShannonEntropy",
                                 "TailPercentage"});
  CHECK(value_metric_names() == std::vector<std::string>{"AUC", "LogLoss", "MAE", "RMSE"});
  CHECK(metric_registry().size() == known_metrics().size());
  CHECK(known_metrics().size() == 16);
  CHECK(is_known_metric("ndcg"));
  CHECK(is_known_metric("ItemCoverage"));
  CHECK(is_known_metric("auc"));
  CHECK_FALSE(is_known_metric("ndcg@10"));
  REQUIRE(find_metric("logloss") != nullptr);
  CHECK(std::string(find_metric("logloss")->name) == "LogLoss");
  CHECK(find_metric("LogLoss")->kind == MetricKind::kValue);
  CHECK_FALSE(find_metric("GAUC")->uses_topk());
  CHECK(find_metric("GAUC")->is_ranking());
  CHECK(find_metric("ItemCoverage")->uses_topk());
  CHECK(find_metric("foo") == nullptr);
  // RecBole's smaller-is-better set, and nothing else.
  std::vector<std::string> smaller;
  for (const MetricInfo& row : metric_registry()) {
    if (row.smaller_is_better) smaller.emplace_back(row.name);
  }
  CHECK(smaller ==
        std::vector<std::string>{"AveragePopularity", "GiniIndex", "LogLoss", "MAE", "RMSE"});
  CHECK(smaller_is_better("AveragePopularity"));
  CHECK(smaller_is_better("giniindex@10"));
  CHECK(smaller_is_better("RMSE"));
  CHECK(smaller_is_better("logloss"));
  CHECK_FALSE(smaller_is_better("Recall@10"));
  CHECK_FALSE(smaller_is_better("ShannonEntropy"));
  CHECK_FALSE(smaller_is_better("AUC"));
  CHECK_FALSE(smaller_is_better("foo"));
  CHECK(bigger_is_better("MRR@10"));
  CHECK(bigger_is_better("auc"));
  CHECK_FALSE(bigger_is_better("MAE"));
  CHECK(needs_rank_stats({"Recall", "gauc"}));
  CHECK_FALSE(needs_rank_stats({"Recall", "NDCG"}));
}

TEST_CASE("appended records give the same metrics as one record set", "[metrics]") {
  const RankingRecords all = from_hits(kPosIdx, kPosLen);
  RankingRecords parts;
  for (int64_t u = 3; u >= 0; --u) parts.append(row_of(all, u));  // any order
  CHECK(parts.n_users() == 4);
  const std::vector<std::string> names = {"recall", "mrr", "ndcg", "hit", "precision", "map"};
  const auto a = compute_metrics(names, {1, 2, 3}, all, {}, 12);
  const auto b = compute_metrics(names, {1, 2, 3}, parts, {}, 12);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].second == Approx(b[i].second).margin(1e-12));

  RankingRecords other_k;
  other_k.max_k = 2;
  other_k.topk_items = {1, 2};
  other_k.hits = {0, 0};
  other_k.pos_len = {1};
  CHECK_THROWS_AS(parts.append(other_k), std::invalid_argument);
}

TEST_CASE("rank_stats uses mid-ranks for ties and counts non-masked candidates",
          "[metrics][gauc]") {
  using recbole::evaluator::rank_stats;
  const float ninf = -std::numeric_limits<float>::infinity();
  // Descending: item 2 (0.9) rank 1; items 1, 3, 6 (0.5) ranks 2..4 -> mid-rank 3; item 4 rank 5.
  const std::vector<float> scores = {ninf, 0.5f, 0.9f, 0.5f, 0.1f, ninf, 0.5f};
  const std::vector<int32_t> pos = {3, 2, 3};  // duplicate counts once
  const auto s = rank_stats(scores.data(), 7, pos.data(), 3);
  CHECK(s.pos_rank_sum == 4.0);
  CHECK(s.user_len == 5);
  const std::vector<int32_t> low = {4};
  CHECK(rank_stats(scores.data(), 7, low.data(), 1).pos_rank_sum == 5.0);
  CHECK(rank_stats(scores.data(), 7, nullptr, 0).pos_rank_sum == 0.0);
  // With no masked entry the lowest score's items are not counted, as RecBole's argmin.
  const std::vector<float> flat = {0.3f, 0.3f, 0.7f};
  CHECK(rank_stats(flat.data(), 3, low.data(), 0).user_len == 1);
  const std::vector<int32_t> bad = {7};
  CHECK_THROWS_AS(rank_stats(scores.data(), 7, bad.data(), 1), std::invalid_argument);
}

TEST_CASE("rank_stats and GAUC agree with brute-force pair counting", "[metrics][gauc]") {
  std::mt19937 gen(7);
  const float ninf = -std::numeric_limits<float>::infinity();
  RankingRecords records;
  double weighted = 0, total = 0;
  for (int u = 0; u < 50; ++u) {
    const int n = 40;
    std::vector<float> scores(n);
    std::vector<int32_t> pos;
    for (int i = 0; i < n; ++i) {
      scores[i] = static_cast<float>(gen() % 6) / 4;  // many ties
      if (i == 0 || gen() % 5 == 0)
        scores[i] = ninf;  // pad and masked history
      else if (gen() % 4 == 0)
        pos.push_back(i);
    }
    if (pos.empty()) pos.push_back(1 + static_cast<int32_t>(gen() % (n - 1)));
    // Positives are never masked in a correct pipeline.
    for (int32_t p : pos)
      if (scores[p] == ninf) scores[p] = 0.25f;
    // Brute force: mid-ranks by counting, and AUC as P(pos > neg) + P(tie) / 2 over candidates.
    double rank_sum = 0;
    for (int32_t p : pos) {
      int greater = 0, equal = 0;
      for (float x : scores) greater += x > scores[p], equal += x == scores[p];
      rank_sum += greater + (equal + 1) / 2.0;
    }
    const auto s = recbole::evaluator::rank_stats(scores.data(), n, pos.data(),
                                                  static_cast<int64_t>(pos.size()));
    CHECK(s.pos_rank_sum == Approx(rank_sum).margin(1e-9));
    int candidates = 0;
    for (float x : scores) candidates += x != ninf;
    CHECK(s.user_len == candidates);
    double pairs = 0, n_pairs = 0;
    for (int32_t p : pos) {
      for (int i = 0; i < n; ++i) {
        if (scores[i] == ninf || std::find(pos.begin(), pos.end(), i) != pos.end()) continue;
        pairs += scores[p] > scores[i] ? 1.0 : scores[p] == scores[i] ? 0.5 : 0.0;
        n_pairs += 1;
      }
    }
    if (n_pairs > 0) {
      weighted += pairs / n_pairs * static_cast<double>(pos.size());
      total += static_cast<double>(pos.size());
    }
    records.pos_rank_sum.push_back(s.pos_rank_sum);
    records.user_len.push_back(s.user_len);
    records.pos_len.push_back(static_cast<int32_t>(pos.size()));
  }
  const auto m = compute_metrics({"gauc"}, {1}, records, {}, kExact);
  CHECK(m.at(0).second == Approx(weighted / total).margin(1e-12));
}

// The evaluator over evaluation sources, on tiny hand-made data: ranking (masking, blocks,
// devices, sampled candidates, unmasked queries) and the labelled mode's records.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"
#include "tests/trainer/hand_run.h"
#include "trainer/evaluator.h"

using recbole::DeviceManager;
using recbole::DeviceSettings;
using recbole::Dist;
using recbole::data::InteractionMatrix;
using recbole::evaluator::Evaluator;
using recbole::evaluator::EvaluatorSettings;
using recbole::evaluator::Phase;
using recbole::models::Model;
using recbole::models::ModelContext;
using recbole::tasks::UserRankingSource;

namespace {

// A "model" whose scores are a fixed table: [n_users, n_items] float32.
class TableModel : public Model {
 public:
  TableModel(const ModelContext& ctx, torch::Tensor table, torch::Device out_device)
      : Model("TableModel", ctx), table_(table), out_device_(out_device) {}
  torch::Tensor full_sort_predict(const recbole::data::Batch& batch) override {
    torch::Tensor s = table_.index_select(0, batch.users.to(torch::kCPU));
    return out_device_.is_cpu() ? s : torch::empty(s.sizes(), s.options().device(out_device_));
  }

 private:
  torch::Tensor table_;
  torch::Device out_device_;
};

struct Fixture {
  recbole::config::Config config = recbole::testing::model_config("BPR");
  DeviceManager dm{recbole::testing::cpu_device()};
  Dist dist;
  // 4 users (0 = pad), 7 items (0 = pad).
  InteractionMatrix train{4, 7, {1, 1, 2, 3}, {1, 2, 3, 4}};
  InteractionMatrix test{4, 7, {1, 1, 2, 3}, {2, 5, 6, 1}};
  UserRankingSource test_queries{test, &train};
  torch::Tensor table = torch::tensor(
      {{0, 0, 0, 0, 0, 0, 0}, {9, 8, 7, 1, 2, 3, 4}, {9, 1, 2, 8, 3, 4, 5}, {9, 6, 1, 2, 8, 3, 4}},
      torch::kFloat32);
  ModelContext ctx{config, 4, 7, train, dm};

  EvaluatorSettings settings(std::vector<int64_t> topk = {1, 3}) {
    EvaluatorSettings s;
    s.metrics = {"Recall", "Hit", "GAUC"};
    s.topk = std::move(topk);
    return s;
  }
};

}  // namespace

TEST_CASE("the evaluator masks the pad and the history, but not this split's positives", "[eval]") {
  Fixture f;
  TableModel m(f.ctx, f.table, torch::kCPU);
  Evaluator ev(f.settings(), f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  auto rec = ev.collect(m, f.test_queries, Phase::kTest);
  REQUIRE(rec.n_users() == 3);
  REQUIRE(rec.max_k == 3);
  // User 1: item 0 (pad) and 1 (history) masked; item 2 is history AND a test positive: kept.
  REQUIRE(std::vector<int32_t>(rec.topk_items.begin(), rec.topk_items.begin() + 3) ==
          std::vector<int32_t>{2, 6, 5});
  REQUIRE(std::vector<uint8_t>(rec.hits.begin(), rec.hits.begin() + 3) ==
          std::vector<uint8_t>{1, 0, 1});
  // User 2: history item 3 masked despite its high score.
  REQUIRE(std::vector<int32_t>(rec.topk_items.begin() + 3, rec.topk_items.begin() + 6) ==
          std::vector<int32_t>{6, 5, 4});
  auto values = ev.evaluate(m, f.test_queries, Phase::kTest);
  REQUIRE(values[0].first == "recall@1");
  // User 1 finds one of its two positives at rank 1; users 2 and 3 their only one.
  REQUIRE(values[0].second == Approx((0.5 + 1 + 1) / 3).epsilon(1e-3));
  REQUIRE(values[3].first == "hit@3");
  REQUIRE(values[3].second == Approx(1.0));
}

TEST_CASE("score blocks of any size give the same records", "[eval]") {
  Fixture f;
  TableModel m(f.ctx, f.table, torch::kCPU);
  auto s_small = f.settings();
  s_small.memory_budget_bytes = 1;  // one user per block
  Evaluator small(s_small, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  Evaluator big(f.settings(), f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  auto a = small.collect(m, f.test_queries), b = big.collect(m, f.test_queries);
  REQUIRE(a.topk_items == b.topk_items);
  REQUIRE(a.hits == b.hits);
  REQUIRE(a.pos_rank_sum == b.pos_rank_sum);
}

TEST_CASE("scores on another device are an error naming the model, not a crash", "[eval]") {
  // Regression for RecBole's Random/ADMMSLIM/SLIMElastic returning CPU scores on a GPU run.
  Fixture f;
  TableModel m(f.ctx, f.table, torch::Device(torch::kMeta));
  Evaluator ev(f.settings(), f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  try {
    ev.collect(m, f.test_queries);
    FAIL("expected DeviceError");
  } catch (const recbole::DeviceError& e) {
    REQUIRE(std::string(e.what()).find("TableModel: full_sort_predict scores is on meta") !=
            std::string::npos);
  }
}

TEST_CASE("sampled evaluation ranks positives among N negatives per positive", "[eval]") {
  Fixture f;
  TableModel m(f.ctx, f.table, torch::kCPU);
  auto s = f.settings({3});
  s.test_mode = *recbole::config::EvalMode::parse("uni1");
  Evaluator ev(s, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  auto rec = ev.collect(m, f.test_queries, Phase::kTest);
  for (int64_t u = 0; u < rec.n_users(); ++u) {
    // Candidates: P positives + at most P negatives (duplicates collapse).
    REQUIRE(rec.user_len[u] >= rec.pos_len[u] + 1);
    REQUIRE(rec.user_len[u] <= 2 * rec.pos_len[u]);
  }
  // Same seed, same candidates.
  auto again = ev.collect(m, f.test_queries, Phase::kTest);
  REQUIRE(again.topk_items == rec.topk_items);
}

TEST_CASE("value metrics under uniN measure each positive against its sampled negatives",
          "[eval][labeled]") {
  Fixture f;
  TableModel m(f.ctx, f.table, torch::kCPU);
  EvaluatorSettings s;
  s.metrics = {"AUC", "LogLoss"};
  s.topk = {10};
  s.test_mode = *recbole::config::EvalMode::parse("uni2");
  Evaluator ev(s, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  const recbole::evaluator::ValueRecords rec =
      ev.collect_sampled_values(m, f.test_queries, Phase::kTest);
  // 4 test positives, each a record labelled 1 followed by its 2 negatives labelled 0.
  REQUIRE(rec.size() == 4 * 3);
  std::map<int64_t, std::set<int64_t>> candidates;
  for (int64_t i = 0; i < rec.size(); ++i) {
    const int32_t u = static_cast<int32_t>(rec.users[i]);
    CHECK(rec.labels[i] == (i % 3 == 0 ? 1.0f : 0.0f));
    // Each user's table row holds distinct scores: the score names the item it scored.
    const torch::Tensor at = (f.table[u] == rec.scores[i]).nonzero();
    REQUIRE(at.size(0) == 1);
    const int32_t item = static_cast<int32_t>(at.item<int64_t>());
    candidates[u].insert(item);
    if (rec.labels[i] == 1.0f) {
      CHECK(f.test.contains(u, item));
    } else {
      CHECK(item != 0);
      CHECK_FALSE(f.test.contains(u, item));
      CHECK_FALSE(f.train.contains(u, item));
    }
  }
  // The sampled ranking draws the same candidates: its per-user candidate counts (GAUC's
  // statistics) are the distinct items of the value records.
  EvaluatorSettings ranking = f.settings({3});
  ranking.test_mode = s.test_mode;
  const auto ranked = Evaluator(ranking, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0})
                          .collect(m, f.test_queries, Phase::kTest);
  REQUIRE(ranked.n_users() == 3);
  for (int64_t r = 0; r < ranked.n_users(); ++r)
    CHECK(ranked.user_len[r] == static_cast<int32_t>(candidates[f.test_queries.rows()[r]].size()));

  // evaluate() computes the value metrics from these records (the formulas of value_metrics.h
  // are tested on their own).
  const auto values = ev.evaluate(m, f.test_queries, Phase::kTest);
  REQUIRE(values.size() == 2);
  CHECK(values[0].first == "auc");
  CHECK(values[0].second == Approx(recbole::evaluator::auc(rec)).margin(1e-4));
  CHECK(values[1].first == "logloss");
  CHECK(values[1].second == Approx(recbole::evaluator::log_loss(rec)).margin(1e-4));
  // Full ranking has no sampled rows: an error, not metrics over an empty set.
  REQUIRE_THROWS_AS(ev.evaluate(m, f.test_queries, Phase::kValid), recbole::ConfigError);

  // A user whose history and split hold every item leaves nothing to sample: an error that
  // names the mode and the user, not a hang (RecBole redraws forever) or a training message.
  const InteractionMatrix full_train{4, 7, {1, 1, 1, 1, 2}, {1, 3, 4, 6, 3}};
  const UserRankingSource all_items{f.test, &full_train};
  CHECK_THROWS_WITH(ev.evaluate(m, all_items, Phase::kTest),
                    Catch::Contains("eval_args mode uni2: user (query row) 1 holds every item") &&
                        Catch::Contains("evaluate with mode full"));
}

TEST_CASE("a query source without a mask ranks the history too", "[eval]") {
  // The sequential task ranks without masking when items may repeat: the mask is optional.
  Fixture f;
  TableModel m(f.ctx, f.table, torch::kCPU);
  Evaluator ev(f.settings({3}), f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  const UserRankingSource unmasked(f.test, nullptr);
  auto rec = ev.collect(m, unmasked, Phase::kTest);
  // User 1: only the pad is masked now, so its history item 1 (score 8) ranks first.
  REQUIRE(std::vector<int32_t>(rec.topk_items.begin(), rec.topk_items.begin() + 3) ==
          std::vector<int32_t>{1, 2, 6});
  // User 2: history item 3 (score 8) is back at the top.
  REQUIRE(rec.topk_items[3] == 3);
}

namespace {

// Scores a (user, item) pair as table[user][item] / 10: the labelled mode calls predict().
class PairTableModel : public Model {
 public:
  PairTableModel(const ModelContext& ctx, torch::Tensor table)
      : Model("PairTableModel", ctx), table_(table) {}
  torch::Tensor full_sort_predict(const recbole::data::Batch& batch) override {
    return table_.index_select(0, batch.users) / 10.0f;
  }

 private:
  torch::Tensor table_;
};

// Labelled rows (user, item, label), cut into batches of `per_batch`.
class HandLabels : public recbole::tasks::LabeledSource {
 public:
  HandLabels(std::vector<int64_t> users, std::vector<int64_t> items, std::vector<float> labels,
             int64_t per_batch)
      : users_(std::move(users)),
        items_(std::move(items)),
        labels_(std::move(labels)),
        per_batch_(per_batch) {}
  int64_t batches() const override {
    return (static_cast<int64_t>(users_.size()) + per_batch_ - 1) / per_batch_;
  }
  recbole::data::Batch batch(int64_t k) const override {
    const int64_t lo = k * per_batch_;
    const int64_t hi = std::min<int64_t>(lo + per_batch_, static_cast<int64_t>(users_.size()));
    recbole::data::Batch b;
    b.users = torch::tensor(std::vector<int64_t>(users_.begin() + lo, users_.begin() + hi));
    b.items = torch::tensor(std::vector<int64_t>(items_.begin() + lo, items_.begin() + hi));
    b.labels = torch::tensor(std::vector<float>(labels_.begin() + lo, labels_.begin() + hi));
    return b;
  }

 private:
  std::vector<int64_t> users_, items_;
  std::vector<float> labels_;
  int64_t per_batch_;
};

}  // namespace

TEST_CASE("the labelled mode records (score, label) per row and computes value metrics",
          "[eval][labeled]") {
  Fixture f;
  PairTableModel m(f.ctx, f.table);
  // Scores (table / 10): 0.8, 0.1, 0.8, 0.4, 0.6 with labels 1, 0, 0, 1, 1.
  HandLabels rows({1, 1, 2, 2, 3}, {1, 3, 3, 5, 1}, {1, 0, 0, 1, 1}, 2);
  EvaluatorSettings s;
  s.metrics = {"AUC", "LogLoss", "MAE", "RMSE"};
  s.topk = {10};
  s.valid_mode = *recbole::config::EvalMode::parse("labeled");
  Evaluator ev(s, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  const auto rec = ev.collect_values(m, rows);
  REQUIRE(rec.scores.size() == 5);
  const std::vector<float> scores = {0.8f, 0.1f, 0.8f, 0.4f, 0.6f}, labels = {1, 0, 0, 1, 1};
  CHECK(rec.scores == scores);
  CHECK(rec.labels == labels);

  const auto values = ev.evaluate(m, rows, Phase::kValid);
  REQUIRE(values.size() == 4);
  // AUC: of the 3 × 2 (positive, negative) pairs, (0.8 vs 0.1), (0.8 vs 0.8: tie, half),
  // (0.4 vs 0.1), (0.6 vs 0.1) order correctly, and 0.4, 0.6 lose to 0.8: (1 + 0.5 + 1 + 1) / 6.
  CHECK(values[0].first == "auc");
  CHECK(values[0].second == Approx(3.5 / 6).margin(1e-4));
  const double logloss =
      -(std::log(0.8) + std::log(0.9) + std::log(0.2) + std::log(0.4) + std::log(0.6)) / 5;
  CHECK(values[1].first == "logloss");
  CHECK(values[1].second == Approx(logloss).margin(1e-4));
  CHECK(values[2].first == "mae");
  CHECK(values[2].second == Approx((0.2 + 0.1 + 0.8 + 0.6 + 0.4) / 5).margin(1e-4));
  CHECK(values[3].first == "rmse");
  CHECK(values[3].second == Approx(std::sqrt((0.04 + 0.01 + 0.64 + 0.36 + 0.16) / 5)).margin(1e-4));

  // A ranking mode for a labelled source, or the labelled mode for ranking queries: an error.
  REQUIRE_THROWS_AS(ev.evaluate(m, rows, Phase::kTest), recbole::ConfigError);
  REQUIRE_THROWS_AS(ev.evaluate(m, f.test_queries, Phase::kValid), recbole::ConfigError);
}

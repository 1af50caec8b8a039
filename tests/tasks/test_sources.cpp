// The training sources, and the seams they open: two models defined here — a pointwise one and
// a user-rows one with two alternating optimisers — train and evaluate through the general
// pipeline, the trainer and the evaluator, which know nothing of them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <torch/torch.h>

#include "models/general/fitted_support.h"
#include "models/layers/sequence.h"
#include "recbole/data/dense_rows.h"
#include "recbole/utils/error.h"
#include "tasks/general/pair_source.h"
#include "tasks/general/pointwise_source.h"
#include "tasks/general/user_rows_source.h"
#include "tests/trainer/hand_run.h"

using recbole::data::Batch;
using recbole::data::InteractionMatrix;
using recbole::models::InputType;
using recbole::models::Model;
using recbole::models::ModelContext;
using recbole::tasks::InteractionData;
using recbole::tasks::SourceSettings;
using recbole::testing::HandRun;
using recbole::testing::Pairs;
using recbole::testing::tiny_config;

namespace {

// 30 users leaning on overlapping windows of 24 items (ids from 1): train, valid and test pairs.
struct Windows {
  Pairs train, valid, test;
  Windows() {
    for (int32_t u = 1; u < 30; ++u) {
      const int32_t start = 1 + (u * 5) % 18;
      for (int32_t k = 0; k < 6; ++k) {
        Pairs& part = k == 4 ? valid : k == 5 ? test : train;
        part.first.push_back(u);
        part.second.push_back(start + k);
      }
    }
  }
};

// Windows as a source reads them: the training matrix and unit item counts beside the pairs.
struct WindowsData : Windows {
  InteractionMatrix matrix{30, 25, train.first, train.second};
  std::vector<int64_t> counts = std::vector<int64_t>(25, 1);
  InteractionData data() const { return {train.first, train.second, matrix, counts}; }
};

// What the hooks saw.
struct HookLog {
  int epoch_starts = 0, epoch_ends = 0, evaluations = 0;
  std::vector<double> losses;  // per train_step
};

// Pointwise: σ(⟨u, i⟩) against the label, binary cross-entropy.
class TinyPointwise : public Model {
 public:
  explicit TinyPointwise(const ModelContext& ctx) : Model("TinyPointwise", ctx) {
    user_ = register_parameter("user", ctx.device.place(torch::randn({ctx.n_users, 8}) * 0.1));
    item_ = register_parameter("item", ctx.device.place(torch::randn({ctx.n_items, 8}) * 0.1));
  }
  torch::Tensor calculate_loss(const Batch& b) override {
    REQUIRE(b.labels.defined());
    REQUIRE_FALSE(b.neg_items.defined());
    const torch::Tensor logits =
        (user_.index_select(0, b.users) * item_.index_select(0, b.items)).sum(1);
    return torch::binary_cross_entropy_with_logits(logits, b.labels);
  }
  torch::Tensor full_sort_predict(const Batch& b) override {
    return torch::matmul(user_.index_select(0, b.users), item_.t());
  }
  torch::Tensor train_step(const Batch& batch, recbole::models::TrainStep& step) override {
    torch::Tensor loss = Model::train_step(batch, step);
    log.losses.push_back(loss.item<double>());
    return loss;
  }
  void on_epoch_start(int64_t) override { ++log.epoch_starts; }
  void on_epoch_end(int64_t) override { ++log.epoch_ends; }
  void before_evaluation() override { ++log.evaluations; }
  HookLog log;

 private:
  torch::Tensor user_, item_;
};

// User rows: a linear autoencoder over the user's history (encoder n_items → 8, decoder
// 8 → n_items) with a multinomial likelihood; the encoder and the decoder each have their own
// optimizer and take turns, one batch each (as RecVAE alternates its parts).
class TinyUserRows : public Model {
 public:
  explicit TinyUserRows(const ModelContext& ctx) : Model("TinyUserRows", ctx) {
    enc_ = register_parameter("encoder", ctx.device.place(torch::randn({ctx.n_items, 8}) * 0.1));
    dec_ = register_parameter("decoder", ctx.device.place(torch::randn({8, ctx.n_items}) * 0.1));
  }
  torch::Tensor calculate_loss(const Batch& b) override {
    REQUIRE(b.history.defined());
    const torch::Tensor logp =
        torch::log_softmax(torch::matmul(torch::matmul(b.history, enc_), dec_), 1);
    return -(logp * b.history).sum(1).mean();
  }
  torch::Tensor full_sort_predict(const Batch& b) override {
    const torch::Tensor rows =
        recbole::data::dense_rows(train_, recbole::models::to_vector(b.users));
    return torch::matmul(torch::matmul(device_manager().place(rows), enc_), dec_);
  }
  std::vector<std::vector<torch::Tensor>> optimizer_groups() override { return {{enc_}, {dec_}}; }
  torch::Tensor train_step(const Batch& batch, recbole::models::TrainStep& step) override {
    const size_t part = steps_++ % 2;
    step.optimizer(0).zero_grad();
    step.optimizer(1).zero_grad();
    torch::Tensor loss = calculate_loss(batch);
    loss.backward();
    step.finish_gradients();
    step.optimizer(part).step();
    parts_stepped.insert(part);
    log.losses.push_back(loss.item<double>());
    return loss.detach();
  }
  void on_epoch_start(int64_t) override { ++log.epoch_starts; }
  void on_epoch_end(int64_t) override { ++log.epoch_ends; }
  void before_evaluation() override { ++log.evaluations; }
  HookLog log;
  std::set<size_t> parts_stepped;

 private:
  torch::Tensor enc_, dec_;
  size_t steps_ = 0;
};

void register_test_models() {
  recbole::models::register_model(
      {"TinyPointwise",
       "general",
       InputType::kPointwise,
       "test: pointwise dot product",
       {},
       [](const ModelContext& c) { return std::make_shared<TinyPointwise>(c); }});
  recbole::models::register_model(
      {"TinyUserRows",
       "general",
       InputType::kUserRows,
       "test: linear autoencoder over user rows",
       {},
       [](const ModelContext& c) { return std::make_shared<TinyUserRows>(c); }});
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t k = from; k < to; ++k) s += v[k];
  return s / static_cast<double>(to - from);
}

}  // namespace

TEST_CASE("the pointwise source labels each positive 1 and its sample_num negatives 0",
          "[pipeline][sources]") {
  WindowsData w;
  const InteractionMatrix& train = w.matrix;
  const InteractionData data = w.data();
  for (int sample_num : {1, 3}) {
    SourceSettings s;
    s.batch_size = 16;
    s.negatives.distribution = "uniform";
    s.negatives.sample_num = sample_num;
    recbole::tasks::PointwiseSource source(data, s);
    source.start_epoch(0);
    Batch b;
    std::multiset<std::pair<int64_t, int64_t>> seen;
    int64_t batches = 0;
    while (source.next(b)) {
      ++batches;
      const int64_t n = b.size();
      const int64_t pos = 16 / (1 + sample_num);  // RecBole: batch_size // (1 + sample_num)
      REQUIRE(n <= pos * (1 + sample_num));
      REQUIRE(n % (1 + sample_num) == 0);
      const int64_t p = n / (1 + sample_num);
      auto users = b.users.accessor<int64_t, 1>();
      auto items = b.items.accessor<int64_t, 1>();
      auto labels = b.labels.accessor<float, 1>();
      for (int64_t r = 0; r < n; ++r) {
        REQUIRE(labels[r] == (r < p ? 1.0f : 0.0f));
        if (r < p) {
          seen.insert({users[r], items[r]});
          // Copy j of the positives carries their j-th negatives, row for row.
          for (int j = 0; j < sample_num; ++j) REQUIRE(users[p + j * p + r] == users[r]);
        } else {
          REQUIRE_FALSE(
              train.contains(static_cast<int32_t>(users[r]), static_cast<int32_t>(items[r])));
        }
      }
    }
    REQUIRE(batches == source.batches_per_epoch());
    // Every training interaction is a positive exactly once per epoch.
    std::multiset<std::pair<int64_t, int64_t>> expected;
    for (size_t k = 0; k < w.train.first.size(); ++k)
      expected.insert({w.train.first[k], w.train.second[k]});
    REQUIRE(seen == expected);
  }
}

TEST_CASE("dynamic sampling keeps the best-scored of candidate_num candidates per negative",
          "[pipeline][sources]") {
  WindowsData w;
  const InteractionMatrix& train = w.matrix;
  const InteractionData data = w.data();
  // A scorer that prefers high item ids and records what it was asked.
  std::vector<std::vector<int64_t>> asked, users;
  auto scorer = [&](const Batch& b, int64_t candidates) {
    REQUIRE(b.size() % candidates == 0);
    asked.emplace_back(b.items.data_ptr<int64_t>(), b.items.data_ptr<int64_t>() + b.size());
    return b.items.to(torch::kFloat32);
  };
  auto walk = [&](int64_t candidates, int64_t skip = 0) {
    SourceSettings s;
    s.batch_size = 16;
    s.negatives.distribution = "uniform";
    s.negatives.candidate_num = candidates;
    recbole::tasks::PairSource source(data, s);
    REQUIRE(source.set_candidate_scorer(scorer) == (candidates > 0));
    REQUIRE((source.sampled_pair_batcher() == nullptr) == (candidates > 0));
    source.start_epoch(2);
    source.skip_batches(skip);
    std::vector<std::vector<int64_t>> negatives;
    Batch b;
    users.clear();
    while (source.next(b)) {
      negatives.emplace_back(b.neg_items.data_ptr<int64_t>(),
                             b.neg_items.data_ptr<int64_t>() + b.size());
      users.emplace_back(b.users.data_ptr<int64_t>(), b.users.data_ptr<int64_t>() + b.size());
    }
    return negatives;
  };
  const auto fixed = walk(0);
  REQUIRE(asked.empty());
  REQUIRE(walk(1) == fixed);  // one candidate: the static draw, scored and kept
  asked.clear();
  const auto dynamic = walk(4);
  REQUIRE(dynamic.size() == fixed.size());
  REQUIRE(asked.size() == fixed.size());
  int64_t better = 0;
  for (size_t b = 0; b < dynamic.size(); ++b) {
    const auto n = static_cast<int64_t>(dynamic[b].size());
    REQUIRE(static_cast<int64_t>(asked[b].size()) == 4 * n);
    for (int64_t j = 0; j < n; ++j) {
      // Candidate k of slot j at k·n + j; candidate 0 is the static draw.
      REQUIRE(asked[b][static_cast<size_t>(j)] == fixed[b][static_cast<size_t>(j)]);
      int64_t best = 0;
      for (int64_t k = 0; k < 4; ++k)
        best = std::max(best, asked[b][static_cast<size_t>(k * n + j)]);
      REQUIRE(dynamic[b][static_cast<size_t>(j)] == best);
      REQUIRE_FALSE(train.contains(static_cast<int32_t>(users[b][static_cast<size_t>(j)]),
                                   static_cast<int32_t>(best)));
      better += best > fixed[b][static_cast<size_t>(j)];
    }
  }
  REQUIRE(better > 0);
  // A resumed epoch draws what the whole walk drew from the skipped batch on.
  const auto resumed = walk(4, 2);
  REQUIRE(resumed == std::vector<std::vector<int64_t>>(dynamic.begin() + 2, dynamic.end()));
}

TEST_CASE("the user-rows source walks every user id once per epoch with its training row",
          "[pipeline][sources]") {
  Windows w;
  InteractionMatrix train(30, 25, w.train.first, w.train.second);
  std::vector<int64_t> counts(25, 1);
  SourceSettings s;
  s.batch_size = 7;
  s.shuffle = false;  // ignored: RecBole's user loader always shuffles
  recbole::tasks::UserRowsSource source({w.train.first, w.train.second, train, counts}, s);
  REQUIRE(source.batches_per_epoch() == 5);  // ⌈30 / 7⌉
  std::vector<int64_t> order;
  for (int64_t epoch : {3, 4}) {
    source.start_epoch(epoch);
    Batch b;
    std::vector<int64_t> seen;
    while (source.next(b)) {
      REQUIRE(b.history.sizes() == torch::IntArrayRef({b.size(), 25}));
      for (int64_t r = 0; r < b.size(); ++r) {
        const int32_t u = static_cast<int32_t>(b.users[r].item<int64_t>());
        seen.push_back(u);
        for (int32_t i = 0; i < 25; ++i)
          REQUIRE((b.history[r][i].item<float>() == 1.0f) == train.contains(u, i));
      }
    }
    if (!order.empty()) REQUIRE(seen != order);  // a new order each epoch
    order = seen;
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(30);
    std::iota(all.begin(), all.end(), 0);
    REQUIRE(seen == all);  // every user once, the pad user 0 included
  }
}

TEST_CASE("a pointwise model without negative sampling is a ConfigError naming model and key",
          "[pipeline][sources]") {
  register_test_models();
  Windows w;
  auto config = tiny_config({{"train_neg_sample_args", "~"}}, "TinyPointwise");
  REQUIRE_THROWS_WITH(HandRun(config, 30, 25, w.train, w.valid, w.test, 1),
                      Catch::Contains("TinyPointwise is a pointwise model") &&
                          Catch::Contains("train_neg_sample_args"));
}

TEST_CASE("models defined outside the library train and evaluate through the sources",
          "[pipeline][sources]") {
  register_test_models();
  Windows w;
  for (const char* name : {"TinyPointwise", "TinyUserRows"}) {
    INFO(name);
    auto config = tiny_config(
        {{"epochs", "30"},
         {"train_batch_size", "16"},
         {"learning_rate", "0.05"},
         {"stopping_step", "100"},
         {"eval_step", "10"},
         {"checkpoint_dir", (std::filesystem::temp_directory_path() / "recbole_sources").string()}},
        name);
    HandRun run(config, 30, 25, w.train, w.valid, w.test, 3);
    REQUIRE_FALSE(run.trainer.uses_fast_epoch());
    const recbole::trainer::FitResult fit = run.trainer.fit();
    REQUIRE(fit.epochs_run == 30);
    REQUIRE(fit.best_valid_score.has_value());
    const auto test = run.trainer.test(true);
    REQUIRE_FALSE(test.empty());
    for (const auto& [k, v] : test) REQUIRE(std::isfinite(v));

    const HookLog& log = std::string(name) == "TinyPointwise"
                             ? dynamic_cast<TinyPointwise&>(*run.model).log
                             : dynamic_cast<TinyUserRows&>(*run.model).log;
    CHECK(log.epoch_starts == 30);
    CHECK(log.epoch_ends == 30);
    CHECK(log.evaluations == 3 + 1);  // every 10 epochs, and the test
    REQUIRE(static_cast<int64_t>(log.losses.size()) == 30 * run.source->batches_per_epoch());
    // It learned: the last epoch's mean loss is well below the first's.
    const size_t per_epoch = static_cast<size_t>(run.source->batches_per_epoch());
    CHECK(mean(log.losses, log.losses.size() - per_epoch, log.losses.size()) <
          0.8 * mean(log.losses, 0, per_epoch));
    if (std::string(name) == "TinyUserRows") {
      const std::set<size_t> both = {0, 1};
      CHECK(dynamic_cast<TinyUserRows&>(*run.model).parts_stepped == both);
    }
  }
}

TEST_CASE("Batch::narrow and Batch::index_select take the same rows of every column",
          "[pipeline][batch]") {
  Batch b;
  b.users = torch::arange(5, torch::kInt64);
  b.items = torch::arange(5, torch::kInt64) + 10;
  b.labels = torch::arange(5, torch::kFloat32) / 10;
  b.columns[recbole::models::layers::kItemSeq] = torch::arange(15, torch::kInt64).view({5, 3});
  b.features["age"] = torch::arange(5, torch::kInt64) + 20;
  const auto rows_of = [](const Batch& x) {
    std::vector<int64_t> users(x.users.data_ptr<int64_t>(),
                               x.users.data_ptr<int64_t>() + x.users.numel());
    for (int64_t r = 0; r < x.size(); ++r) {
      const int64_t u = users[static_cast<size_t>(r)];
      CHECK(x.items[r].item<int64_t>() == u + 10);
      CHECK(x.labels[r].item<float>() == static_cast<float>(u) / 10);
      CHECK(recbole::models::layers::item_seq(x)[r][2].item<int64_t>() == 3 * u + 2);
      CHECK(x.features.at("age")[r].item<int64_t>() == u + 20);
    }
    return users;
  };
  const Batch part = b.narrow(1, 3);
  CHECK(part.size() == 3);
  CHECK(rows_of(part) == std::vector<int64_t>{1, 2, 3});
  CHECK(!part.neg_items.defined());  // an undefined column stays undefined
  CHECK(b.size() == 5);              // the batch itself is untouched
  const Batch picked = b.index_select(torch::tensor({4, 0, 2}, torch::kInt64));
  CHECK(rows_of(picked) == std::vector<int64_t>{4, 0, 2});
}

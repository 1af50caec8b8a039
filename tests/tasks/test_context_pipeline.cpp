// The context task's data: the preset a context model gets, ml-100k's labelled rows, splits and
// feature fields as RecBole has them (issue 22's figures), batches with gathered features, and
// clear errors for bad feature input.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <torch/torch.h>

#include "recbole/config/config.h"
#include "recbole/data/atomic_file.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "tasks/context/context_pipeline.h"
#include "tests/tasks/pipeline_fixture.h"

using recbole::config::Config;
using recbole::config::ConfigSources;
using recbole::testing::error_of;
using recbole::testing::shared_datasets;

namespace {

Config context_config(const std::string& model, const std::string& dataset,
                      const std::string& data_path,
                      std::vector<std::pair<std::string, std::string>> extra = {}) {
  ConfigSources s;
  s.model = model;
  s.dataset = dataset;
  s.api_overrides = {{"data_path", data_path}};
  for (auto& kv : extra) s.api_overrides.push_back(kv);
  return Config::build(s);
}

struct Loaded {
  Config config;
  recbole::data::Dataset dataset;
  recbole::data::SplitDataset split;
  explicit Loaded(Config c)
      : config(std::move(c)),
        dataset(recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(config))),
        split(recbole::data::split_dataset(dataset,
                                           recbole::data::DatasetOptions::from_config(config))) {}
};

int64_t positives(const std::vector<float>& labels, const std::vector<int64_t>& rows) {
  int64_t n = 0;
  for (int64_t r : rows) n += labels[static_cast<size_t>(r)] == 1.0f;
  return n;
}

// A folder "ctx" holding ctx.inter / ctx.user / ctx.item with the given texts.
struct ContextDataset {
  std::filesystem::path root;
  explicit ContextDataset(const std::string& inter, const std::string& user = "",
                          const std::string& item = "") {
    root = std::filesystem::temp_directory_path() /
           ("recbole_ctx_" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(root / "ctx");
    std::ofstream(root / "ctx" / "ctx.inter") << inter;
    if (!user.empty()) std::ofstream(root / "ctx" / "ctx.user") << user;
    if (!item.empty()) std::ofstream(root / "ctx" / "ctx.item") << item;
  }
  ~ContextDataset() { std::filesystem::remove_all(root); }
  std::string path() const { return root.string(); }
};

}  // namespace

TEST_CASE("a context model on ml-100k gets RecBole's preset, labels, splits and features",
          "[pipeline][context]") {
  Loaded l(context_config("DeepFM", "ml-100k", shared_datasets()));
  const YAML::Node ea = l.config.node("eval_args");
  CHECK(ea["mode"]["valid"].as<std::string>() == "labeled");
  CHECK(l.config.get_string("valid_metric") == "AUC");
  CHECK(l.config.get_string_list("metrics") == std::vector<std::string>({"AUC", "LogLoss"}));

  recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split);
  const std::vector<float>& labels = p.labels();
  REQUIRE(labels.size() == 100000);
  int64_t pos = 0;
  for (float v : labels) pos += v == 1.0f;
  CHECK(pos == 55375);
  CHECK(l.split.train.size() == 80000);
  CHECK(l.split.valid.size() == 10000);
  CHECK(l.split.test.size() == 10000);
  CHECK(positives(labels, l.split.train.rows) == 44386);
  CHECK(positives(labels, l.split.valid.rows) == 5501);
  CHECK(positives(labels, l.split.test.rows) == 5488);

  const recbole::data::FeatureSchema& s = p.schema();
  const std::vector<std::pair<std::string, int64_t>> sizes = {
      {"user_id", 944},   {"item_id", 1683},    {"age", 62},  {"gender", 3},
      {"occupation", 22}, {"release_year", 74}, {"class", 20}};
  for (const auto& [name, num] : sizes) {
    INFO(name);
    const recbole::data::FeatureSpec* f = s.find(name);
    REQUIRE(f != nullptr);
    CHECK(f->num == num);
    CHECK(f->is_input());
  }
  CHECK(s.find("class")->type == recbole::data::FieldType::kTokenSeq);
  CHECK(s.find("class")->seq_len == 6);
  REQUIRE(s.find("timestamp") != nullptr);  // loaded, not a model input
  CHECK_FALSE(s.find("timestamp")->is_input());
  CHECK(s.find("rating") == nullptr);  // the threshold's field is gone
  CHECK(s.find("label") == nullptr);

  // A training batch: 2048 rows with every input field gathered by user / item id.
  auto source = p.training_source(recbole::models::InputType::kPointwise, "DeepFM", 0, 1);
  CHECK(source->batches_per_epoch() == 40);
  source->start_epoch(0);
  recbole::data::Batch b;
  REQUIRE(source->next(b));
  REQUIRE(b.size() == 2048);
  CHECK(b.features.at("class").sizes() == torch::IntArrayRef({2048, 6}));
  CHECK(b.features.at("age").sizes() == torch::IntArrayRef({2048}));
  CHECK(torch::equal(b.features.at("user_id"), b.users));
  const recbole::data::Table& users = *l.dataset.user_table();
  const int64_t u = b.users[5].item<int64_t>();
  CHECK(b.features.at("gender")[5].item<int64_t>() == users.column("gender").tokens[u]);
  // Every training row once per epoch.
  int64_t rows = b.size();
  while (source->next(b)) rows += b.size();
  CHECK(rows == 80000);

  // The labelled sources: 4096-row batches in split order.
  const auto& valid = static_cast<const recbole::tasks::LabeledSource&>(p.valid());
  CHECK(valid.batches() == 3);
  CHECK(valid.batch(2).size() == 10000 - 2 * 4096);
  CHECK(valid.batch(0).labels[0].item<float>() == labels[l.split.valid.rows[0]]);
}

TEST_CASE("context data errors name the file, line, column or key", "[pipeline][context]") {
  SECTION("a token_seq cell beyond the length limit") {
    std::string cell;
    for (int64_t k = 0; k <= recbole::data::kMaxSequenceLength; ++k) cell += "g ";
    ContextDataset d("user_id:token\titem_id:token\trating:float\n1\t1\t5\n", "",
                     "item_id:token\tclass:token_seq\n1\t" + cell + "\n");
    const std::string msg = error_of([&] {
      Loaded l(context_config(
          "FM", "ctx", d.path(),
          {{"threshold", "{rating: 4}"},
           {"load_col", "{inter: [user_id, item_id, rating], item: [item_id, class]}"}}));
    });
    CHECK(msg.find("ctx.item:2") != std::string::npos);
    CHECK(msg.find("class:token_seq") != std::string::npos);
  }
  SECTION("a float feature that is not a number") {
    ContextDataset d("user_id:token\titem_id:token\trating:float\n1\t1\t5\n",
                     "user_id:token\tincome:float\n1\tlots\n");
    const std::string msg = error_of([&] {
      Loaded l(context_config(
          "FM", "ctx", d.path(),
          {{"threshold", "{rating: 4}"},
           {"load_col", "{inter: [user_id, item_id, rating], user: [user_id, income]}"}}));
    });
    CHECK(msg.find("ctx.user:2") != std::string::npos);
    CHECK(msg.find("income") != std::string::npos);
  }
  SECTION("a load_col field the file lacks") {
    ContextDataset d("user_id:token\titem_id:token\trating:float\n1\t1\t5\n",
                     "user_id:token\tage:token\n1\t20\n");
    const std::string msg = error_of([&] {
      Loaded l(context_config(
          "FM", "ctx", d.path(),
          {{"threshold", "{rating: 4}"},
           {"load_col", "{inter: [user_id, item_id, rating], user: [user_id, gender]}"}}));
    });
    CHECK(msg.find("ctx.user") != std::string::npos);
    CHECK(msg.find("gender") != std::string::npos);
  }
  SECTION("a threshold on a field that does not exist") {
    ContextDataset d("user_id:token\titem_id:token\trating:float\n1\t1\t5\n");
    const std::string msg = error_of([&] {
      Loaded l(context_config(
          "FM", "ctx", d.path(),
          {{"threshold", "{score: 4}"}, {"load_col", "{inter: [user_id, item_id, rating]}"}}));
    });
    CHECK(msg.find("threshold") != std::string::npos);
    CHECK(msg.find("score") != std::string::npos);
  }
  SECTION("no label at all") {
    ContextDataset d("user_id:token\titem_id:token\trating:float\n1\t1\t5\n2\t1\t3\n");
    Loaded l(context_config("FM", "ctx", d.path(),
                            {{"load_col", "{inter: [user_id, item_id, rating]}"}}));
    const std::string msg =
        error_of([&] { recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split); });
    CHECK(msg.find("label") != std::string::npos);
    CHECK(msg.find("threshold") != std::string::npos);
  }
  SECTION("ranking metrics under the labeled mode") {
    Loaded l(context_config("FM", "ml-100k", shared_datasets(),
                            {{"metrics", "[NDCG]"}, {"valid_metric", "NDCG@10"}}));
    const std::string msg =
        error_of([&] { recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split); });
    CHECK(msg.find("NDCG is a ranking metric") != std::string::npos);
  }
  SECTION("AUC beside ranking metrics is refused by the config") {
    CHECK_THROWS_AS(
        context_config("FM", "ml-100k", shared_datasets(), {{"metrics", "[AUC, NDCG]"}}),
        recbole::ConfigError);
  }
}

TEST_CASE("discretized numerical features reach the batches as bucket ids", "[pipeline][context]") {
  // income: 0, 15, 25, 40 → ED with 4 buckets of width ~10: ids 1, 2, 3, 4. scores (LD): the
  // values stay (all ≤ 2) and rank 1.. in a sequence: 0.5 → 1, 1 → 2, 2 → 3.
  ContextDataset d(
      "user_id:token\titem_id:token\trating:float\n1\t1\t5\n2\t1\t3\n3\t2\t4\n4\t2\t1\n",
      "user_id:token\tincome:float\tscores:float_seq\tweight:float\n"
      "1\t0\t0.5 1\t3\n2\t15\t2\t3\n3\t25\t1 1 0.5\t3\n4\t40\t2 0.5\t3\n");
  const std::vector<std::pair<std::string, std::string>> base = {
      {"threshold", "{rating: 4}"},
      {"load_col", "{inter: [user_id, item_id, rating], user: [user_id, income, scores, weight]}"},
      {"numerical_features", "[income, scores, weight]"}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return context_config("FM", "ctx", d.path(), extra);
  };
  Loaded l(with({{"discretization", "{income: {method: ED, bucket: 4}, scores: {method: LD}}"}}));
  recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split);
  const recbole::data::FeatureSchema& s = p.schema();
  CHECK(s.find("income")->discretised);
  CHECK(s.find("income")->num == 5);
  CHECK(s.find("scores")->discretised);
  CHECK(s.find("scores")->num == 4);
  CHECK_FALSE(s.find("weight")->discretised);
  CHECK(s.find("weight")->num == 2);

  auto source = p.training_source(recbole::models::InputType::kPointwise, "FM", 0, 1);
  source->start_epoch(0);
  recbole::data::Batch b;
  int64_t seen = 0;
  while (source->next(b)) {
    const torch::Tensor income = b.features.at("income");
    REQUIRE(income.scalar_type() == torch::kInt64);
    const torch::Tensor scores = b.features.at("scores");  // [B, 3, 2]
    for (int64_t r = 0; r < b.size(); ++r) {
      const int64_t u = b.users[r].item<int64_t>();
      const std::string& user = l.dataset.user_token(static_cast<int32_t>(u));
      INFO("user " << user);
      const int64_t want_income = user == "1" ? 1 : user == "2" ? 2 : user == "3" ? 3 : 4;
      CHECK(income[r].item<int64_t>() == want_income);
      const std::vector<float> want_scores = user == "1"   ? std::vector<float>{1, 2, 0}
                                             : user == "2" ? std::vector<float>{3, 0, 0}
                                             : user == "3" ? std::vector<float>{2, 2, 1}
                                                           : std::vector<float>{3, 1, 0};
      for (int64_t j = 0; j < 3; ++j) {
        CHECK(scores[r][j][1].item<float>() == want_scores[static_cast<size_t>(j)]);
        CHECK(scores[r][j][0].item<float>() == (want_scores[static_cast<size_t>(j)] ? 1 : 0));
      }
      CHECK(b.features.at("weight")[r].item<float>() == 3.0f);
      ++seen;
    }
  }
  CHECK(seen == l.split.train.size());

  SECTION("bad discretization maps are refused by key") {
    for (const auto& [value, expect] : std::vector<std::pair<std::string, std::string>>{
             {"{age: {method: ED, bucket: 4}}", "age is not in numerical_features"},
             {"{income: {method: EF, bucket: 4}}", "method: EF"},
             {"{income: {method: ED}}", "bucket: missing"},
             {"{income: {method: ED, bucket: 0}}", "bucket: 0"},
             {"{income: {method: ED, bucket: 2.5}}", "bucket: 2.5"},
             {"{income: {bucket: 4}}", "expected {method: ED"},
             {"{income: {method: ED, buckets: 4}}", "unknown key buckets"}}) {
      INFO(value);
      Loaded bad(with({{"discretization", value}}));
      const std::string msg =
          error_of([&] { recbole::tasks::ContextPipeline q(bad.config, bad.dataset, bad.split); });
      CHECK(msg.find("discretization.") != std::string::npos);
      CHECK(msg.find(expect) != std::string::npos);
    }
  }
}

TEST_CASE("a context model ranks every item under mode full, as RecBole's predict fallback",
          "[pipeline][context]") {
  // RecBole's config replaces eval_args wholesale, so the split becomes its default (RS 8:1:1
  // grouped by user) as well; ranking metrics then need a ranking mode.
  Loaded l(context_config(
      "FM", "ml-100k", shared_datasets(),
      {{"eval_args", "{mode: full}"}, {"metrics", "[Recall, NDCG]"}, {"valid_metric", "NDCG@10"}}));
  recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split);
  REQUIRE(p.valid().kind() == recbole::tasks::EvaluationSource::Kind::kRanking);
  REQUIRE(p.test().kind() == recbole::tasks::EvaluationSource::Kind::kRanking);
  const auto& valid = static_cast<const recbole::tasks::RankingSource&>(p.valid());
  const auto& test = static_cast<const recbole::tasks::RankingSource&>(p.test());

  // Positives: each user's items of the split, whatever their label; the valid split's users
  // are the rows. Masks: train at validation, train and valid at test.
  int64_t listed = 0;
  for (int32_t u : valid.rows()) listed += valid.positives().row_size(u);
  CHECK(listed == l.split.valid.size());
  const size_t r0 = 0;
  const int32_t u0 = l.split.valid.users[r0], i0 = l.split.valid.items[r0];
  CHECK(valid.positives().contains(u0, i0));
  CHECK(test.mask()->contains(u0, i0));
  CHECK_FALSE(valid.mask()->contains(u0, i0));
  CHECK(valid.mask()->contains(l.split.train.users[0], l.split.train.items[0]));
  bool label_zero_listed = false;
  for (size_t r = 0; r < l.split.valid.rows.size() && !label_zero_listed; ++r)
    label_zero_listed = p.labels()[static_cast<size_t>(l.split.valid.rows[r])] == 0.0f &&
                        valid.positives().contains(l.split.valid.users[r], l.split.valid.items[r]);
  CHECK(label_zero_listed);

  // A batch of users carries their user-side features, not the items'.
  const recbole::data::Batch b = valid.batch({u0, 5});
  REQUIRE(b.users.size(0) == 2);
  CHECK(b.features.at("user_id").equal(b.users));
  for (const char* f : {"age", "gender", "occupation"}) {
    REQUIRE(b.features.count(f) == 1);
    CHECK(b.features.at(f).size(0) == 2);
  }
  CHECK(b.features.count("release_year") == 0);
  CHECK(b.features.count("class") == 0);

  SECTION("an interaction-side input field has no value for a pair that never met") {
    Loaded t(context_config("FM", "ml-100k", shared_datasets(),
                            {{"eval_args", "{mode: full}"},
                             {"metrics", "[NDCG]"},
                             {"valid_metric", "NDCG@10"},
                             {"numerical_features", "[timestamp]"}}));
    const std::string msg =
        error_of([&] { recbole::tasks::ContextPipeline q(t.config, t.dataset, t.split); });
    CHECK(msg.find("eval_args") != std::string::npos);
    CHECK(msg.find("timestamp") != std::string::npos);
    CHECK(msg.find("mode labeled") != std::string::npos);
  }
}

TEST_CASE("train_neg_sample_args gives a context model RecBole's point-wise sampled batches",
          "[pipeline][context]") {
  // 2048 / (1 + 2) = 682 dataset rows a batch, all labelled 1, then two blocks of the same rows
  // with a negative item (its features gathered, the user's and the row's kept), labelled 0.
  Loaded l(context_config("FM", "ml-100k", shared_datasets(),
                          {{"train_neg_sample_args", "{distribution: uniform, sample_num: 2}"}}));
  recbole::tasks::ContextPipeline p(l.config, l.dataset, l.split);
  auto source = p.training_source(recbole::models::InputType::kPointwise, "FM", 0, 1);
  CHECK(source->batches_per_epoch() == (80000 + 681) / 682);
  source->start_epoch(3);
  recbole::data::Batch b;
  REQUIRE(source->next(b));
  REQUIRE(b.size() == 3 * 682);
  CHECK(b.labels.narrow(0, 0, 682).eq(1.0f).all().item<bool>());
  CHECK(b.labels.narrow(0, 682, 2 * 682).eq(0.0f).all().item<bool>());
  recbole::data::InteractionMatrix train(l.dataset.n_users(), l.dataset.n_items(),
                                         l.split.train.users, l.split.train.items);
  const recbole::data::Table& items = *l.dataset.item_table();
  int label_zero_rows = 0;
  for (int64_t k = 0; k < 682; ++k) {
    const int64_t u = b.users[k].item<int64_t>(), pos = b.items[k].item<int64_t>();
    CHECK(train.contains(static_cast<int32_t>(u), static_cast<int32_t>(pos)));
    for (int64_t j = 1; j <= 2; ++j) {
      const int64_t r = j * 682 + k, neg = b.items[r].item<int64_t>();
      CHECK(b.users[r].item<int64_t>() == u);
      CHECK(neg >= 1);
      CHECK_FALSE(train.contains(static_cast<int32_t>(u), static_cast<int32_t>(neg)));
      CHECK(b.features.at("release_year")[r].item<int64_t>() ==
            items.column("release_year").tokens[static_cast<size_t>(neg)]);
      CHECK(b.features.at("age")[r].item<int64_t>() == b.features.at("age")[k].item<int64_t>());
    }
  }
  // Label-0 rows of the data are positives here, as in RecBole.
  for (int64_t r : l.split.train.rows) label_zero_rows += p.labels()[static_cast<size_t>(r)] == 0;
  CHECK(label_zero_rows > 0);
  int64_t rows = 682;
  while (source->next(b)) rows += b.size() / 3;
  CHECK(rows == 80000);

  // The same epoch on two ranks: each gets every other row of a batch with the same negatives.
  auto rank1 = p.training_source(recbole::models::InputType::kPointwise, "FM", 1, 2);
  source->start_epoch(3);
  rank1->start_epoch(3);
  recbole::data::Batch whole, part;
  REQUIRE(source->next(whole));
  REQUIRE(rank1->next(part));
  REQUIRE(part.size() == 3 * 341);
  for (int64_t k = 0; k < 341; ++k)
    for (int64_t j = 0; j <= 2; ++j)
      CHECK(part.items[j * 341 + k].item<int64_t>() ==
            whole.items[j * 682 + 2 * k + 1].item<int64_t>());
}

TEST_CASE("dynamic sampling scores a context row's candidates with their own item features",
          "[pipeline][context]") {
  // RecBole scores the candidates with the positive item's features still joined (docs/models.md);
  // here each candidate row carries its own item's, and keeps its row's user and context.
  auto loaded = [](const std::string& args) {
    return std::make_unique<Loaded>(
        context_config("FM", "ml-100k", shared_datasets(), {{"train_neg_sample_args", args}}));
  };
  const auto l = loaded("{distribution: uniform, sample_num: 2, dynamic: true, candidate_num: 3}");
  recbole::tasks::ContextPipeline p(l->config, l->dataset, l->split);
  const auto fixed_l = loaded("{distribution: uniform, sample_num: 2}");
  recbole::tasks::ContextPipeline fixed_p(fixed_l->config, fixed_l->dataset, fixed_l->split);
  std::vector<recbole::data::Batch> asked;
  auto scorer = [&](const recbole::data::Batch& b, int64_t candidates) {
    CHECK(candidates == 3);
    asked.push_back(b);
    return b.items.to(torch::kFloat32);
  };
  auto first_batch = [&](recbole::tasks::ContextPipeline& q, int rank, int world) {
    auto source = q.training_source(recbole::models::InputType::kPointwise, "FM", rank, world);
    source->set_candidate_scorer(scorer);
    source->start_epoch(3);
    recbole::data::Batch b;
    REQUIRE(source->next(b));
    return b;
  };
  const recbole::data::Batch fixed = first_batch(fixed_p, 0, 1);
  REQUIRE(asked.empty());
  const recbole::data::Batch b = first_batch(p, 0, 1);
  REQUIRE(asked.size() == 1);
  const recbole::data::Batch& c = asked[0];
  const int64_t rows = 682, n = 2 * rows;  // negative slots: two blocks of the batch's rows
  REQUIRE(b.size() == 3 * rows);
  REQUIRE(c.size() == 3 * n);
  CHECK(torch::equal(b.items.narrow(0, 0, rows), fixed.items.narrow(0, 0, rows)));
  recbole::data::InteractionMatrix train(l->dataset.n_users(), l->dataset.n_items(),
                                         l->split.train.users, l->split.train.items);
  const recbole::data::Table& items = *l->dataset.item_table();
  int64_t better = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t row = rows + j, static_draw = fixed.items[row].item<int64_t>();
    CHECK(c.items[j].item<int64_t>() == static_draw);  // candidate 0: the static draw
    int64_t best = 0;
    for (int64_t m = 0; m < 3; ++m) {
      const int64_t r = m * n + j, item = c.items[r].item<int64_t>();
      CHECK(c.users[r].item<int64_t>() == b.users[row].item<int64_t>());
      CHECK(c.features.at("age")[r].item<int64_t>() == b.features.at("age")[row].item<int64_t>());
      CHECK(c.features.at("release_year")[r].item<int64_t>() ==
            items.column("release_year").tokens[static_cast<size_t>(item)]);
      CHECK_FALSE(train.contains(static_cast<int32_t>(b.users[row].item<int64_t>()),
                                 static_cast<int32_t>(item)));
      best = std::max(best, item);
    }
    CHECK(b.items[row].item<int64_t>() == best);
    CHECK(b.features.at("release_year")[row].item<int64_t>() ==
          items.column("release_year").tokens[static_cast<size_t>(best)]);
    better += best > static_draw;
  }
  CHECK(better > 0);
  // Two ranks keep the candidates of one: rank 1's rows are the whole batch's odd rows.
  const recbole::data::Batch part = first_batch(p, 1, 2);
  REQUIRE(part.size() == 3 * 341);
  for (int64_t k = 0; k < 341; ++k)
    for (int64_t j = 0; j <= 2; ++j)
      CHECK(part.items[j * 341 + k].item<int64_t>() ==
            b.items[j * 682 + 2 * k + 1].item<int64_t>());
}

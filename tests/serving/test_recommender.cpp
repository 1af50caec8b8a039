// recbole::Recommender: every registered model, trained briefly by run(), saved, and loaded from
// its checkpoint alone, gives the evaluator's top-K with seen items excluded; item-history
// queries; concurrent callers; and the errors of damaged or foreign checkpoints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <torch/torch.h>

#include "models/layers/sequence.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/runtime/dist.h"
#include "recbole/utils/atomic_write.h"
#include "serving/recommender.h"
#include "tasks/context/context_pipeline.h"
#include "tasks/sequential/sequential_pipeline.h"
#include "tasks/serving_section.h"
#include "tasks/task_family.h"
#include "tasks/task_pipeline.h"
#include "tests/serving/serving_test_util.h"
#include "trainer/evaluator.h"

using recbole::Recommender;
using recbole::testing::TempDir;
using recbole::testing::train_checkpoint;

namespace {

constexpr int64_t kK = 10;

// The run's pipeline rebuilt from the dataset files (what the evaluator sees), the model loaded
// from the checkpoint as Trainer::test loads it.
struct EvaluatorSide {
  recbole::config::Config config;
  recbole::data::Dataset dataset;
  recbole::data::SplitDataset split;
  std::unique_ptr<recbole::tasks::TaskPipeline> task;
  recbole::DeviceManager device;
  std::shared_ptr<recbole::models::Model> model;

  EvaluatorSide(recbole::config::Config c, const std::string& checkpoint)
      : config(std::move(c)),
        dataset(recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(config))),
        split(recbole::data::split_dataset(dataset,
                                           recbole::data::DatasetOptions::from_config(config))),
        task(recbole::tasks::make_task_pipeline(
            recbole::tasks::find_family(recbole::models::find_model(config.model()).task), config,
            dataset, std::make_shared<const recbole::data::SplitDataset>(split))),
        device(cpu()) {
    model = recbole::models::create_model(config.model(), task->model_context(device));
    torch::serialize::InputArchive archive;
    recbole::trainer::load_checkpoint_archive(checkpoint, "checkpoint", archive);
    model->load(archive);
    model->eval();
    torch::NoGradGuard no_grad;
    model->before_evaluation();
  }
  static recbole::DeviceSettings cpu() {
    recbole::DeviceSettings s;
    s.device = "cpu";
    return s;
  }
  const recbole::data::InteractionMatrix& train() const {
    return task->model_context(device).train;
  }
};

// One positive per user that is neither trained on nor the padding: it is never masked, so the
// evaluator's list is the ranking of every item outside the user's training items.
recbole::data::InteractionMatrix unseen_positives(const recbole::data::InteractionMatrix& train) {
  std::vector<int32_t> us, is;
  for (int32_t u = 1; u < train.n_users(); ++u) {
    if (train.row_size(u) == 0) continue;
    for (int32_t i = 1; i < train.n_items(); ++i)
      if (!train.contains(u, i)) {
        us.push_back(u);
        is.push_back(i);
        break;
      }
  }
  return recbole::data::InteractionMatrix(train.n_users(), train.n_items(), us, is);
}

// Compares the evaluator's top-K (ids) with the Recommender's for every evaluated user. Two
// lists may differ only where the scores of the two items at a position are equal within float
// rounding (the kernels sum in different orders).
void compare_with_evaluator(const std::string& name, EvaluatorSide& side, const Recommender& rec) {
  const auto& train = side.train();
  const recbole::data::InteractionMatrix positives = unseen_positives(train);
  recbole::Dist dist;
  recbole::evaluator::EvaluatorSettings es;
  es.metrics = {"recall"};
  es.topk = {kK};
  recbole::evaluator::Evaluator ev(es, side.device, dist, side.task->n_items(),
                                   side.task->item_train_count());
  const recbole::tasks::UserRankingSource source(positives, &train);
  const recbole::evaluator::RankingRecords records = ev.collect(*side.model, source);
  const std::vector<int32_t> users = positives.nonempty_users();
  REQUIRE(records.n_users() == static_cast<int64_t>(users.size()));

  // Users and items by token: the checkpoint's ids are the dataset's.
  std::vector<int32_t> rec_users;
  for (int32_t u : users) {
    const int32_t id = rec.user_id(side.dataset.user_token(u));
    REQUIRE(id == u);
    rec_users.push_back(id);
  }
  std::vector<Recommender::IdList> lists;
  rec.recommend_ids(rec_users, kK, /*exclude_history=*/true, &lists, /*parallel=*/true);

  torch::Tensor scores;
  {
    torch::NoGradGuard no_grad;
    recbole::data::Batch b;
    std::vector<int64_t> ids(users.begin(), users.end());
    b.users = recbole::data::id_tensor(ids);
    scores = recbole::DeviceManager::to_host(side.model->full_sort_predict(b)).contiguous();
  }
  int64_t exact = 0, total = 0;
  for (size_t r = 0; r < users.size(); ++r) {
    const int32_t* expected = &records.topk_items[r * records.max_k];
    int n_expected = 0;
    while (n_expected < records.max_k && expected[n_expected] >= 0) ++n_expected;
    INFO(name << ": user " << side.dataset.user_token(users[r]));
    REQUIRE(static_cast<int>(lists[r].size()) == n_expected);
    const float* row = scores[static_cast<int64_t>(r)].data_ptr<float>();
    for (int j = 0; j < n_expected; ++j) {
      const int32_t got = lists[r][static_cast<size_t>(j)].first;
      CHECK_FALSE(train.contains(users[r], got));
      CHECK(got != 0);
      CHECK(rec.item_token(got) == side.dataset.item_token(got));
      ++total;
      if (got == expected[j]) {
        ++exact;
        continue;
      }
      const double a = row[expected[j]], b = row[got];
      INFO("position " << j << ": evaluator " << expected[j] << " (" << a << "), recommender "
                       << got << " (" << b << ")");
      CHECK(std::abs(a - b) <= 1e-4 * (1.0 + std::abs(a)));
    }
    // The recommender's own scores agree with the model's.
    for (const auto& [item, score] : lists[r])
      CHECK(std::abs(score - row[item]) <= 1e-4 * (1.0 + std::abs(row[item])));
  }
  CHECK(total > 0);
  WARN(name << ": " << exact << " of " << total << " top-" << kK
            << " positions identical to the evaluator's, the rest tied within float rounding");
}

// Top-K ids of a score row with `masked` items (and the padding item) left out; ties by id.
std::vector<int32_t> top_ids(const float* row, int64_t n_items, const std::vector<int32_t>& masked,
                             int64_t k) {
  std::vector<int32_t> ids;
  for (int32_t i = 1; i < n_items; ++i)
    if (std::find(masked.begin(), masked.end(), i) == masked.end()) ids.push_back(i);
  std::stable_sort(ids.begin(), ids.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
  ids.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(ids.size()))));
  return ids;
}

// The Recommender's list against `expected` ids ranked by `row`: equal, or differing where the
// two items' scores tie within float rounding; the recommender's scores are the row's.
void check_same_list(const Recommender::IdList& got, const std::vector<int32_t>& expected,
                     const float* row) {
  REQUIRE(got.size() == expected.size());
  for (size_t j = 0; j < got.size(); ++j) {
    const double a = row[expected[j]], b = row[got[j].first];
    INFO("position " << j << ": expected " << expected[j] << " (" << a << "), recommender "
                     << got[j].first << " (" << b << ")");
    CHECK(std::abs(a - b) <= 1e-4 * (1.0 + std::abs(a)));
    CHECK(std::abs(got[j].second - b) <= 1e-4 * (1.0 + std::abs(b)));
  }
}

// A sequential model: each test sample's input, given as an item history, ranks as the
// evaluator ranks that sample (nothing masked: RecBole's repeatable evaluation); a known user is
// scored from their whole sequence (training, valid and test items, the last
// MAX_ITEM_LIST_LENGTH of them), their training items excluded.
void compare_sequential(const std::string& name, EvaluatorSide& side, const Recommender& rec) {
  const auto& seq = dynamic_cast<const recbole::tasks::SequentialPipeline&>(*side.task);
  const recbole::data::SequenceStore& store = seq.store();
  const auto& test = static_cast<const recbole::tasks::RankingSource&>(side.task->test());
  const int64_t n_items = side.task->n_items();
  int64_t compared = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(test.rows().size()); r += 7) {
    const recbole::data::Batch b = test.batch({r});
    torch::Tensor row;
    {
      torch::NoGradGuard no_grad;
      row = recbole::DeviceManager::to_host(side.model->full_sort_predict(b)).contiguous();
    }
    const int64_t len = recbole::models::layers::item_seq_len(b)[0].item<int64_t>();
    std::vector<int32_t> history;
    for (int64_t t = 0; t < len; ++t)
      history.push_back(recbole::models::layers::item_seq(b)[0][t].item<int32_t>());
    INFO(name << ": test sample " << r << ", user " << b.users[0].item<int64_t>());
    if (rec.can_recommend_from_history()) {
      check_same_list(rec.recommend_history_ids(history, kK, false),
                      top_ids(row.data_ptr<float>(), n_items, {}, kK), row.data_ptr<float>());
      ++compared;
    }
  }
  // Known users: the model's scores for the last items of the whole sequence.
  int64_t users = 0;
  for (int32_t u = 1; u < store.n_users(); u += 5) {
    const int64_t lo = store.offsets()[static_cast<size_t>(u)];
    const int64_t hi = store.offsets()[static_cast<size_t>(u) + 1];
    if (lo == hi) continue;
    const int64_t len = std::min<int64_t>(hi - lo, store.max_len());
    recbole::data::Batch b;
    b.users = torch::full({1}, static_cast<int64_t>(u), torch::kInt64);
    b.columns[recbole::models::layers::kItemSeq] =
        torch::zeros({1, store.max_len()}, torch::kInt64);
    for (int64_t t = 0; t < len; ++t)
      recbole::models::layers::item_seq(b)[0][t] =
          static_cast<int64_t>(store.items()[static_cast<size_t>(hi - len + t)]);
    b.columns[recbole::models::layers::kItemSeqLen] = torch::full({1}, len, torch::kInt64);
    torch::Tensor row;
    {
      torch::NoGradGuard no_grad;
      row = recbole::DeviceManager::to_host(side.model->full_sort_predict(b)).contiguous();
    }
    std::vector<Recommender::IdList> lists;
    rec.recommend_ids({u}, kK, true, &lists);
    INFO(name << ": user " << side.dataset.user_token(u));
    check_same_list(lists[0], top_ids(row.data_ptr<float>(), n_items, rec.history_of(u), kK),
                    row.data_ptr<float>());
    ++users;
  }
  CHECK(users > 0);
  WARN(name << ": " << compared << " test samples given as histories and " << users
            << " known users compared with the model's ranking");
}

// A context model: for each labelled test row (u, i), the Recommender's score of item i for
// user u is the model's prediction for that row as the pipeline builds it (the same features);
// the list excludes u's training items and the model cannot score an item history.
void compare_context(const std::string& name, EvaluatorSide& side, const Recommender& rec) {
  const auto& test = static_cast<const recbole::tasks::LabeledSource&>(side.task->test());
  const recbole::data::Batch b = test.batch(0);
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = recbole::DeviceManager::to_host(side.model->predict(b)).contiguous();
  }
  const int64_t n = std::min<int64_t>(b.users.size(0), 60);
  REQUIRE(n > 0);
  for (int64_t r = 0; r < n; ++r) {
    const int32_t u = static_cast<int32_t>(b.users[r].item<int64_t>());
    const int32_t i = static_cast<int32_t>(b.items[r].item<int64_t>());
    std::vector<Recommender::IdList> all;
    rec.recommend_ids({u}, rec.n_items(), false, &all);
    REQUIRE(static_cast<int64_t>(all[0].size()) == rec.n_items() - 1);
    const auto it =
        std::find_if(all[0].begin(), all[0].end(), [i](const auto& p) { return p.first == i; });
    REQUIRE(it != all[0].end());
    INFO(name << ": test row " << r << " (user " << u << ", item " << i << ")");
    CHECK(std::abs(it->second - expected[r].item<float>()) <= 1e-5);
    std::vector<Recommender::IdList> top;
    rec.recommend_ids({u}, kK, true, &top);
    for (const auto& [item, score] : top[0]) CHECK_FALSE(side.train().contains(u, item));
  }
  CHECK_FALSE(rec.can_recommend_from_history());
  WARN(name << ": " << n << " labelled test rows scored as the model predicts them");
}

}  // namespace

TEST_CASE("every registered model: a fresh Recommender from the checkpoint ranks as the evaluator",
          "[serving][models]") {
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.description.rfind("test:", 0) == 0) continue;  // test-only models
    const std::string& name = descriptor.name;
    DYNAMIC_SECTION(name) {
      TempDir dir("recbole_serving_" + name);
      if (descriptor.task == "sequential") {
        const std::vector<std::pair<std::string, std::string>> timed = {
            {"load_col", "{inter: [user_id, item_id, timestamp]}"},
            {"MAX_ITEM_LIST_LENGTH", "8"}};  // below every user's length: inputs are cut
        const std::string checkpoint = train_checkpoint(name, dir, timed);
        const std::shared_ptr<const Recommender> rec = Recommender::load(checkpoint);
        CHECK(rec->info().task == "sequential");
        // FPMC and Caser read the user's own factors; the others only the sequence.
        CHECK(rec->can_recommend_from_history() == (name != "FPMC" && name != "Caser"));
        EvaluatorSide side(recbole::testing::serving_run_config(name, dir, timed), checkpoint);
        compare_sequential(name, side, *rec);
        continue;
      }
      if (descriptor.task == "context") {
        const std::vector<std::pair<std::string, std::string>> features = {
            {"load_col",
             "{inter: [user_id, item_id, rating], user: [user_id, age], item: [item_id, genre, "
             "class]}"},
            {"threshold", "{rating: 4}"}};
        const std::string checkpoint = train_checkpoint(name, dir, features);
        const std::shared_ptr<const Recommender> rec = Recommender::load(checkpoint);
        CHECK(rec->info().task == "context");
        EvaluatorSide side(recbole::testing::serving_run_config(name, dir, features), checkpoint);
        compare_context(name, side, *rec);
        continue;
      }
      // Knowledge models rank users' items as general ones do (their checkpoint adds the KG).
      REQUIRE((descriptor.task == "general" || descriptor.task == "knowledge"));
      const std::string checkpoint = train_checkpoint(name, dir);
      REQUIRE_FALSE(checkpoint.empty());
      REQUIRE(std::filesystem::exists(checkpoint));
      // The Recommender first, from the file alone.
      const std::shared_ptr<const Recommender> rec = Recommender::load(checkpoint);
      CHECK(rec->info().model == name);
      CHECK(rec->info().dataset == "serving_tiny");
      EvaluatorSide side(recbole::testing::serving_run_config(name, dir), checkpoint);
      CHECK(rec->n_users() == side.dataset.n_users());
      CHECK(rec->n_items() == side.dataset.n_items());
      compare_with_evaluator(name, side, *rec);

      // Without exclusion the training items come back (every model ranks some of them).
      const int32_t u = side.train().nonempty_users().front();
      const auto all = rec->recommend(side.dataset.user_token(u), rec->n_items(), false);
      CHECK(static_cast<int64_t>(all.size()) >= rec->n_items() - 1 - 0);
      CHECK(std::none_of(all.begin(), all.end(), [](const auto& r) { return r.item_id == 0; }));

      // Item histories: a model that can score one gives a known user's list from that user's
      // training items; the others say why not.
      const std::vector<int32_t> hist = rec->history_of(u);
      if (rec->can_recommend_from_history()) {
        const auto from_hist = rec->recommend_history_ids(hist, kK, true);
        std::vector<Recommender::IdList> by_user;
        rec->recommend_ids({u}, kK, true, &by_user);
        REQUIRE(from_hist.size() == by_user[0].size());
        for (size_t j = 0; j < from_hist.size(); ++j)
          CHECK(std::abs(from_hist[j].second - by_user[0][j].second) <=
                1e-4 * (1.0 + std::abs(by_user[0][j].second)));
      } else {
        CHECK_THROWS_AS(rec->recommend_history_ids(hist, kK, true), recbole::NotSupportedError);
      }
    }
  }
}

TEST_CASE("a context model reading an interaction field cannot be served, and says which",
          "[serving][context]") {
  TempDir dir("recbole_serving_context_inter");
  const std::string checkpoint =
      train_checkpoint("FM", dir,
                       {{"load_col", "{inter: [user_id, item_id, rating, timestamp]}"},
                        {"threshold", "{rating: 4}"},
                        {"numerical_features", "[timestamp]"}});
  CHECK_THROWS_WITH(Recommender::load(checkpoint),
                    Catch::Contains("reading the interaction field timestamp"));
}

TEST_CASE("the models that can recommend from an item history say so", "[serving]") {
  for (const char* name : {"EASE", "ItemKNN", "SLIMElastic", "ADMMSLIM", "MultiVAE", "MultiDAE",
                           "RecVAE", "MacridVAE", "Pop"}) {
    TempDir dir(std::string("recbole_serving_hist_") + name);
    const auto rec = Recommender::load(train_checkpoint(name, dir));
    INFO(name);
    CHECK(rec->can_recommend_from_history());
    std::vector<std::string> unknown;
    const auto list = rec->recommend_from_history(
        {rec->item_token(1), rec->item_token(2), "no-such-item"}, 5, true, &unknown);
    CHECK(list.size() == 5);
    CHECK(unknown == std::vector<std::string>{"no-such-item"});
    for (const auto& r : list) CHECK((r.item_id != 1 && r.item_id != 2 && r.item_id != 0));
  }
  for (const char* name : {"BPR", "LightGCN", "NeuMF"}) {
    TempDir dir(std::string("recbole_serving_hist_") + name);
    const auto rec = Recommender::load(train_checkpoint(name, dir));
    INFO(name);
    CHECK_FALSE(rec->can_recommend_from_history());
    CHECK_THROWS_WITH(rec->recommend_from_history({rec->item_token(1)}, 5),
                      Catch::Contains("cannot recommend from an item history"));
  }
}

TEST_CASE("a Recommender answers many threads at once as it answers one", "[serving]") {
  for (const char* name : {"BPR", "EASE", "ItemKNN", "MultiVAE", "NeuMF", "LightGCN"}) {
    TempDir dir(std::string("recbole_serving_threads_") + name);
    const auto rec = Recommender::load(train_checkpoint(name, dir));
    INFO(name);
    std::vector<std::string> users;
    for (int32_t u = 1; u < rec->n_users(); ++u) users.push_back(rec->user_token(u));
    // Sequentially first.
    std::vector<std::vector<recbole::Recommendation>> expected;
    for (const std::string& u : users) expected.push_back(rec->recommend(u, kK));
    const auto batch = rec->recommend_batch(users, kK);
    for (size_t r = 0; r < users.size(); ++r) {
      REQUIRE(batch[r].known);
      REQUIRE(batch[r].items.size() == expected[r].size());
      for (size_t j = 0; j < expected[r].size(); ++j) {
        CHECK(batch[r].items[j].item == expected[r][j].item);
        CHECK(batch[r].items[j].score == Approx(expected[r][j].score).epsilon(1e-5));
      }
    }
    std::atomic<int64_t> mismatches{0}, calls{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < 3; ++round)
          for (size_t r = static_cast<size_t>(t) % users.size(); r < users.size(); r += 3) {
            const auto got = rec->recommend(users[r], kK);
            ++calls;
            if (got.size() != expected[r].size()) {
              ++mismatches;
              continue;
            }
            // The same items in the same order; scores up to float32 rounding (NeuMF's differed
            // by one ulp between the calling thread and concurrent ones on an AMD EPYC VM).
            for (size_t j = 0; j < got.size(); ++j)
              if (got[j].item != expected[r][j].item ||
                  std::abs(got[j].score - expected[r][j].score) >
                      1e-6 * std::max(1.0, std::abs(static_cast<double>(expected[r][j].score))))
                ++mismatches;
          }
      });
    for (auto& th : threads) th.join();
    CHECK(calls > 0);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("unknown users, bad k and batches with unknown users", "[serving]") {
  TempDir dir("recbole_serving_errors");
  const auto rec = Recommender::load(train_checkpoint("BPR", dir));
  CHECK_THROWS_AS(rec->recommend("no-such-user", 10), recbole::UnknownUserError);
  CHECK_THROWS_AS(rec->recommend("[PAD]", 10), recbole::UnknownUserError);
  CHECK_THROWS_WITH(rec->recommend(rec->user_token(1), 0), Catch::Contains("k must be at least 1"));
  CHECK_THROWS_WITH(rec->recommend(rec->user_token(1), -1),
                    Catch::Contains("k must be at least 1"));
  // k above the catalogue: every item that is not excluded.
  const auto all = rec->recommend(rec->user_token(1), 1000000000);
  CHECK(static_cast<int64_t>(all.size()) ==
        rec->n_items() - 1 - static_cast<int64_t>(rec->history_of(1).size()));
  const auto batch = rec->recommend_batch({rec->user_token(1), "nobody", rec->user_token(2)}, 3);
  REQUIRE(batch.size() == 3);
  CHECK(batch[0].known);
  CHECK_FALSE(batch[1].known);
  CHECK(batch[1].items.empty());
  CHECK(batch[2].items.size() == 3);
}

TEST_CASE("damaged, foreign and old checkpoints are clear errors", "[serving]") {
  TempDir dir("recbole_serving_damaged");
  const std::string good = train_checkpoint("BPR", dir);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    const std::string p = dir / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  };
  CHECK_THROWS_WITH(Recommender::load(dir / "missing.pth"), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(Recommender::load(write("cut.pth", bytes.substr(0, bytes.size() / 2))),
                    Catch::Contains("cut short"));
  std::string flipped = bytes;
  flipped[flipped.size() / 3] ^= 0x5a;
  CHECK_THROWS_WITH(Recommender::load(write("flipped.pth", flipped)), Catch::Contains("checksum"));
  CHECK_THROWS_WITH(Recommender::load(write("text.pth", "hello\n")),
                    Catch::Contains("not a whole recbole-cpp checkpoint"));

  // A checkpoint of the model alone (before serving sections existed).
  auto model_only = std::make_shared<torch::serialize::OutputArchive>();
  model_only->write("user_embedding", torch::zeros({3, 4}));
  recbole::write_file_atomically(dir / "old.pth", recbole::trainer::checkpoint_bytes(model_only),
                                 "the checkpoint");
  CHECK_THROWS_WITH(Recommender::load(dir / "old.pth"), Catch::Contains("has no serving section"));

  // A serving section of another format.
  auto future = std::make_shared<torch::serialize::OutputArchive>();
  torch::serialize::OutputArchive section;
  section.write("meta", c10::IValue(std::string(R"({"format": 99, "model": "BPR"})")));
  future->write(recbole::serving::kServingKey, section);
  recbole::write_file_atomically(dir / "future.pth", recbole::trainer::checkpoint_bytes(future),
                                 "the checkpoint");
  CHECK_THROWS_WITH(Recommender::load(dir / "future.pth"),
                    Catch::Contains("serving format 99") && Catch::Contains("reads format 1"));

  // A resume checkpoint is not a best-model checkpoint.
  for (const auto& e : std::filesystem::directory_iterator(dir / "saved"))
    if (e.path().string().find("-resume-") != std::string::npos)
      CHECK_THROWS_WITH(Recommender::load(e.path().string()),
                        Catch::Contains("has no serving section"));
  // The good one still loads.
  CHECK_NOTHROW(Recommender::load(good));
}

TEST_CASE("a checkpoint loads and recommends with its dataset gone", "[serving]") {
  TempDir dir("recbole_serving_no_data");
  std::filesystem::copy(recbole::testing::serving_data_path(), dir / "data",
                        std::filesystem::copy_options::recursive);
  const std::string checkpoint = train_checkpoint("ItemKNN", dir, {{"data_path", dir / "data"}});
  std::filesystem::remove_all(dir / "data");
  const auto rec = Recommender::load(checkpoint);
  CHECK(rec->info().model == "ItemKNN");
  const auto list = rec->recommend("u7", 5);
  CHECK(list.size() == 5);
  for (const auto& r : list) CHECK_FALSE(r.item.empty());
}

TEST_CASE("an IVF index over a factor model's items: exact when every cell is scanned",
          "[serving][index]") {
  TempDir dir("recbole_serving_index");
  const std::string checkpoint = train_checkpoint("BPR", dir);
  recbole::RecommenderOptions ivf;
  ivf.index.kind = "ivf";
  ivf.index.nlist = 8;
  ivf.index.nprobe = 8;
  if (!recbole::serving::ItemIndex::available()) {
    CHECK_THROWS_WITH(Recommender::load(checkpoint, ivf), Catch::Contains("built without it"));
    WARN("built without faiss: the IVF index is not tested");
    return;
  }
  const auto exact = Recommender::load(checkpoint);
  const auto all_cells = Recommender::load(checkpoint, ivf);
  CHECK(all_cells->info().index == "ivf (nlist 8, nprobe 8)");
  ivf.index.nprobe = 1;
  const auto one_cell = Recommender::load(checkpoint, ivf);
  for (int32_t u = 1; u < exact->n_users(); ++u) {
    INFO("user " << u);
    std::vector<Recommender::IdList> e, a, o;
    exact->recommend_ids({u}, kK, true, &e);
    all_cells->recommend_ids({u}, kK, true, &a);
    one_cell->recommend_ids({u}, kK, true, &o);
    // Every cell scanned: the exact list, up to ties within float rounding.
    REQUIRE(a[0].size() == e[0].size());
    for (size_t j = 0; j < e[0].size(); ++j)
      CHECK(std::abs(a[0][j].second - e[0][j].second) <= 1e-4 * (1.0 + std::abs(e[0][j].second)));
    // One cell: at most k items, best first, none of the user's training items.
    const std::vector<int32_t> seen = exact->history_of(u);
    CHECK(o[0].size() <= static_cast<size_t>(kK));
    for (size_t j = 0; j < o[0].size(); ++j) {
      CHECK_FALSE(std::binary_search(seen.begin(), seen.end(), o[0][j].first));
      CHECK(o[0][j].first != 0);
      if (j > 0) CHECK(o[0][j - 1].second >= o[0][j].second);
    }
  }
  // Only factor models have item vectors to index; an unknown kind is named.
  TempDir ease_dir("recbole_serving_index_ease");
  CHECK_THROWS_WITH(Recommender::load(train_checkpoint("EASE", ease_dir), ivf),
                    Catch::Contains("searches the item factors of a factor model"));
  recbole::RecommenderOptions bogus;
  bogus.index.kind = "hnsw2";
  CHECK_THROWS_WITH(Recommender::load(checkpoint, bogus),
                    Catch::Contains("expected exact or ivf, got \"hnsw2\""));
}

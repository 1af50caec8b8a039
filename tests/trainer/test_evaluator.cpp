// The full-ranking evaluator and the trainer's rules, on tiny hand-made data.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "models/general/bpr.h"
#include "recbole/data/dataset_options.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/quick_start.h"
#include "recbole/data/train_batcher.h"
#include "trainer/evaluator.h"
#include "trainer/fused_bpr.h"
#include "trainer/trainer.h"

using recbole::DeviceManager;
using recbole::DeviceSettings;
using recbole::Dist;
using recbole::data::InteractionMatrix;
using recbole::models::Model;
using recbole::models::ModelContext;
using recbole::models::ModelKind;
using recbole::trainer::Evaluator;
using recbole::trainer::EvaluatorSettings;
using recbole::trainer::Phase;

namespace {

recbole::config::Config tiny_config(std::vector<std::pair<std::string, std::string>> extra = {}) {
  recbole::config::ConfigSources s;
  s.model = "BPR";
  s.dataset = "tiny";
  s.api_overrides = std::move(extra);
  return recbole::config::Config::build(s);
}

// A "model" whose scores are a fixed table: [n_users, n_items] float32.
class TableModel : public Model {
 public:
  TableModel(const ModelContext& ctx, torch::Tensor table, torch::Device out_device)
      : Model("TableModel", ctx), table_(table), out_device_(out_device) {}
  ModelKind kind() const override { return ModelKind::kFitOnce; }
  torch::Tensor full_sort_predict(const torch::Tensor& users) override {
    torch::Tensor s = table_.index_select(0, users.to(torch::kCPU));
    return out_device_.is_cpu() ? s : torch::empty(s.sizes(), s.options().device(out_device_));
  }

 private:
  torch::Tensor table_;
  torch::Device out_device_;
};

struct Fixture {
  recbole::config::Config config = tiny_config();
  DeviceManager dm{DeviceSettings{"cpu"}};
  Dist dist;
  // 4 users (0 = pad), 7 items (0 = pad).
  InteractionMatrix train{4, 7, {1, 1, 2, 3}, {1, 2, 3, 4}};
  InteractionMatrix test{4, 7, {1, 1, 2, 3}, {2, 5, 6, 1}};
  torch::Tensor table = torch::tensor({{0, 0, 0, 0, 0, 0, 0},
                                       {9, 8, 7, 1, 2, 3, 4},
                                       {9, 1, 2, 8, 3, 4, 5},
                                       {9, 6, 1, 2, 8, 3, 4}}, torch::kFloat32);
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
  auto rec = ev.collect(m, f.test, f.train, Phase::kTest);
  REQUIRE(rec.n_users() == 3);
  REQUIRE(rec.max_k == 3);
  // User 1: item 0 (pad) and 1 (history) masked; item 2 is history AND a test positive: kept.
  REQUIRE(std::vector<int32_t>(rec.topk_items.begin(), rec.topk_items.begin() + 3) ==
          std::vector<int32_t>{2, 6, 5});
  REQUIRE(std::vector<uint8_t>(rec.hits.begin(), rec.hits.begin() + 3) == std::vector<uint8_t>{1, 0, 1});
  // User 2: history item 3 masked despite its high score.
  REQUIRE(std::vector<int32_t>(rec.topk_items.begin() + 3, rec.topk_items.begin() + 6) ==
          std::vector<int32_t>{6, 5, 4});
  auto values = ev.evaluate(m, f.test, f.train, Phase::kTest);
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
  auto a = small.collect(m, f.test, f.train), b = big.collect(m, f.test, f.train);
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
    ev.collect(m, f.test, f.train);
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
  s.test_mode = "uni1";
  Evaluator ev(s, f.dm, f.dist, 7, {0, 1, 1, 1, 1, 0, 0});
  auto rec = ev.collect(m, f.test, f.train, Phase::kTest);
  for (int64_t u = 0; u < rec.n_users(); ++u) {
    // Candidates: P positives + at most P negatives (duplicates collapse).
    REQUIRE(rec.user_len[u] >= rec.pos_len[u] + 1);
    REQUIRE(rec.user_len[u] <= 2 * rec.pos_len[u]);
  }
  // Same seed, same candidates.
  auto again = ev.collect(m, f.test, f.train, Phase::kTest);
  REQUIRE(again.topk_items == rec.topk_items);
}

TEST_CASE("valid_metric_bigger follows RecBole's rule", "[trainer]") {
  REQUIRE(recbole::trainer::valid_metric_bigger("MRR@10"));
  REQUIRE(recbole::trainer::valid_metric_bigger("ndcg@5"));
  REQUIRE_FALSE(recbole::trainer::valid_metric_bigger("GiniIndex@10"));
  REQUIRE_FALSE(recbole::trainer::valid_metric_bigger("averagepopularity@10"));
}

namespace {

using Pairs = std::pair<std::vector<int32_t>, std::vector<int32_t>>;  // (users, items)

// A BPR model and its Trainer on hand-made train / valid / test pairs (ids from 1; 0 = pad),
// the model's weights seeded with `seed`.
struct TinyBprRun {
  TinyBprRun(const recbole::config::Config& config, int64_t n_users, int64_t n_items,
             const Pairs& train_pairs, const Pairs& valid_pairs, const Pairs& test_pairs,
             uint64_t seed)
      : users(train_pairs.first),
        items(train_pairs.second),
        train(n_users, n_items, users, items),
        valid(n_users, n_items, valid_pairs.first, valid_pairs.second),
        test(n_users, n_items, test_pairs.first, test_pairs.second),
        train_valid(InteractionMatrix::merge(train, valid)),
        ctx{config, n_users, n_items, train, dm},
        model((dm.seed(seed), recbole::models::create_model("BPR", ctx))),
        ev(recbole::trainer::evaluator_settings_from_config(config), dm, dist, n_items,
           std::vector<int64_t>(static_cast<size_t>(n_items), 1)),
        td{users, items, train, valid, test, train_valid},
        trainer(config, *model, dm, dist, td, ev) {}

  DeviceManager dm{DeviceSettings{"cpu"}};
  Dist dist;
  std::vector<int32_t> users, items;
  InteractionMatrix train, valid, test, train_valid;
  ModelContext ctx;
  std::shared_ptr<Model> model;
  Evaluator ev;
  recbole::trainer::TrainData td;
  recbole::trainer::Trainer trainer;
};

}  // namespace

TEST_CASE("BPR trains, keeps the best checkpoint and reloads it for the test", "[trainer]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "recbole_trainer_ckpt").string();
  std::filesystem::remove_all(dir);
  for (const char* fast : {"true", "false"}) {
    auto config = tiny_config({{"epochs", "4"}, {"train_batch_size", "4"}, {"checkpoint_dir", dir},
                               {"fast_bpr", fast}, {"embedding_size", "8"}});
    TinyBprRun run(config, 4, 8, {{1, 1, 2, 2, 3, 3, 1, 2}, {1, 2, 3, 4, 5, 6, 3, 1}},
                   {{1, 2, 3}, {4, 5, 1}}, {{1, 2, 3}, {5, 6, 2}}, 1);
    REQUIRE(run.trainer.uses_fused_path() == (std::string(fast) == "true"));
    auto fit = run.trainer.fit();
    REQUIRE(fit.epochs_run >= 1);
    REQUIRE(fit.epochs_run <= 4);
    REQUIRE(fit.best_valid_score.has_value());
    REQUIRE(std::filesystem::exists(fit.checkpoint_path));
    // Reloading the best checkpoint into a fresh model gives the same test metrics.
    auto after = run.trainer.test(true);
    run.dm.seed(99);
    auto fresh = recbole::models::create_model("BPR", run.ctx);
    recbole::trainer::Trainer t2(config, *fresh, run.dm, run.dist, run.td, run.ev);
    t2.load_checkpoint(fit.checkpoint_path);
    REQUIRE(t2.test(false) == after);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("The checkpoint holds the best epoch's model, not the last one's", "[trainer]") {
  // stopping_step 0 stops at the first evaluation without improvement (ties improve), so the
  // last epoch is strictly worse than the best: the best model is written, although it was
  // kept in memory between writes (Trainer::keep_best).
  const std::string dir = (std::filesystem::temp_directory_path() / "recbole_trainer_best").string();
  std::filesystem::remove_all(dir);
  for (const char* fast : {"true", "false"}) {
    auto config = tiny_config({{"epochs", "200"}, {"train_batch_size", "2"}, {"checkpoint_dir", dir},
                               {"fast_bpr", fast}, {"embedding_size", "8"},
                               {"learning_rate", "0.05"}, {"stopping_step", "0"},
                               {"valid_metric", "ndcg@3"}, {"topk", "3"}});
    TinyBprRun run(config, 6, 10,
                   {{1, 1, 2, 2, 3, 3, 1, 2, 4, 4, 5, 5}, {1, 2, 3, 4, 5, 6, 3, 1, 7, 2, 4, 8}},
                   {{1, 2, 3, 4, 5}, {4, 5, 1, 9, 2}}, {{1, 2, 3, 4, 5}, {5, 6, 2, 3, 9}}, 3);
    auto ndcg = [&] {
      for (const auto& [k, v] : run.trainer.validate())
        if (k == "ndcg@3") return v;
      FAIL("ndcg@3 not computed");
      return 0.0;
    };
    auto fit = run.trainer.fit();
    REQUIRE(fit.best_epoch + 1 < fit.epochs_run);  // stopped after a worse epoch
    REQUIRE(ndcg() < *fit.best_valid_score);
    run.trainer.load_checkpoint(fit.checkpoint_path);
    REQUIRE(ndcg() == Approx(*fit.best_valid_score).epsilon(1e-12));
  }
  std::filesystem::remove_all(dir);
}

namespace {

// Trains BPR (weights seeded with 5) on the given interactions; returns [user, item] weights
// and, through `fused`, whether the fused path ran.
std::vector<torch::Tensor> train_bpr(const recbole::config::Config& config,
                                     const DeviceSettings& ds, const std::vector<int32_t>& users,
                                     const std::vector<int32_t>& items, int64_t n_users,
                                     int64_t n_items, bool* fused = nullptr) {
  DeviceManager dm(ds);
  Dist dist;
  InteractionMatrix train(n_users, n_items, users, items), empty(n_users, n_items, {}, {});
  ModelContext ctx{config, n_users, n_items, train, dm};
  dm.seed(5);
  auto model = recbole::models::create_model("BPR", ctx);
  Evaluator ev(recbole::trainer::evaluator_settings_from_config(config), dm, dist, n_items,
               std::vector<int64_t>(static_cast<size_t>(n_items), 1));
  recbole::trainer::TrainData td{users, items, train, empty, empty, train};
  recbole::trainer::Trainer trainer(config, *model, dm, dist, td, ev);
  if (fused != nullptr) *fused = trainer.uses_fused_path();
  trainer.fit();
  return {model->parameters()[0].detach().clone(), model->parameters()[1].detach().clone()};
}

}  // namespace

TEST_CASE("fused and generic BPR paths compute the same training", "[trainer]") {
  // Same seed, same data: the fused loops must match autograd + torch's Adam or SGD to float
  // rounding (SGD with weight decay moves every row, without it only the batch's rows).
  const std::vector<std::pair<const char*, const char*>> optimizers = {
      {"adam", "0"}, {"sgd", "0"}, {"sgd", "0.01"}};
  for (const auto& [learner, wd] : optimizers) {
    std::vector<torch::Tensor> weights;
    for (const char* fast : {"true", "false"}) {
      auto config = tiny_config({{"epochs", "3"}, {"train_batch_size", "3"}, {"fast_bpr", fast},
                                 {"embedding_size", "8"}, {"eval_step", "0"},
                                 {"learner", learner}, {"weight_decay", wd},
                                 {"learning_rate", std::string(learner) == "sgd" ? "0.5" : "0.001"},
                                 {"checkpoint_dir", (std::filesystem::temp_directory_path() / "recbole_fused").string()}});
      const std::vector<int32_t> users = {1, 1, 2, 2, 3, 3, 1, 2, 3}, items = {1, 2, 3, 4, 5, 6, 3, 1, 2};
      bool fused = false;
      weights.push_back(train_bpr(config, DeviceSettings{"cpu"}, users, items, 4, 9, &fused)[1]);
      REQUIRE(fused == (std::string(fast) == "true"));
    }
    INFO(learner << ", weight_decay " << wd);
    REQUIRE(torch::allclose(weights[0], weights[1], 1e-4, 1e-6));
  }
}

TEST_CASE("an unknown model name is a ConfigError listing the known models", "[models]") {
  REQUIRE_NOTHROW(recbole::models::check_model_name("BPR"));
  try {
    recbole::models::check_model_name("BRP");
    FAIL("expected ConfigError");
  } catch (const recbole::ConfigError& e) {
    const std::string msg = e.what();
    REQUIRE(msg.find("\"BRP\"") != std::string::npos);
    REQUIRE(msg.find("BPR") != std::string::npos);
    REQUIRE(msg.find("EASE") != std::string::npos);
  }
}

namespace {

// 11 users × 5 items each over 19 items (ids from 1).
void small_interactions(std::vector<int32_t>& users, std::vector<int32_t>& items) {
  for (int32_t u = 1; u < 12; ++u)
    for (int32_t j = 0; j < 5; ++j) users.push_back(u), items.push_back(1 + (u * 7 + j * 3) % 19);
}

// Trains BPR on a small fixed dataset with the given overrides; returns [user, item] weights.
std::vector<torch::Tensor> train_small_bpr(std::vector<std::pair<std::string, std::string>> extra,
                                           int num_threads) {
  extra.insert(extra.end(), {{"epochs", "3"}, {"train_batch_size", "4"}, {"embedding_size", "8"},
                             {"eval_step", "0"},
                             {"checkpoint_dir", (std::filesystem::temp_directory_path() /
                                                 "recbole_fused_threads").string()}});
  auto config = tiny_config(extra);
  DeviceSettings ds;
  ds.device = "cpu";
  ds.num_threads = num_threads;
  std::vector<int32_t> users, items;
  small_interactions(users, items);
  bool fused = false;
  auto weights = train_bpr(config, ds, users, items, 12, 20, &fused);
  REQUIRE(fused);
  return weights;
}

}  // namespace

TEST_CASE("the fused BPR path gives bit-identical weights for any number of threads", "[trainer]") {
  // sgd with weight decay runs the dense update (every owned row), sgd without it the sparse one.
  const std::vector<std::pair<const char*, const char*>> optimizers = {
      {"adam", "0"}, {"sparse_adam", "0"}, {"sgd", "0"}, {"sgd", "0.01"}};
  for (const auto& [learner, wd] : optimizers) {
    const auto one = train_small_bpr({{"learner", learner}, {"weight_decay", wd}}, 1);
    const auto three = train_small_bpr({{"learner", learner}, {"weight_decay", wd}}, 3);
    INFO(learner << ", weight_decay " << wd);
    REQUIRE(torch::equal(one[0], three[0]));
    REQUIRE(torch::equal(one[1], three[1]));
  }
}

TEST_CASE("the fused BPR path gathers the same gradients from stashes as from the parameters",
          "[trainer]") {
  // Big tables use per-sample stashes, small ones read the parameter rows (kStashAboveBytes):
  // both must train bit-identically, for every learner and with 1 or 3 threads.
  using recbole::trainer::FusedBprTrainer;
  std::vector<int32_t> users, items;
  small_interactions(users, items);
  for (auto update : {FusedBprTrainer::Update::kDenseAdam, FusedBprTrainer::Update::kLazyAdam,
                      FusedBprTrainer::Update::kSgd}) {
    std::vector<std::vector<torch::Tensor>> weights;
    for (int threads : {1, 3}) {
      for (double stash_above : {0.0, 1e18}) {
        auto config = tiny_config({{"embedding_size", "8"}});
        DeviceSettings ds;
        ds.device = "cpu";
        ds.num_threads = threads;
        DeviceManager dm(ds);
        InteractionMatrix train(12, 20, users, items);
        ModelContext ctx{config, 12, 20, train, dm};
        dm.seed(5);
        auto model = recbole::models::create_model("BPR", ctx);
        recbole::data::NegativeSampler sampler(train, "uniform", 1.0,
                                               std::vector<int64_t>(20, 1));
        recbole::data::TrainBatcher batcher(users, items, &sampler, 1, 4, true, 7);
        FusedBprTrainer fused(dynamic_cast<recbole::models::BPR&>(*model), update, 0.01, 0.0,
                              stash_above);
        for (int64_t epoch = 0; epoch < 3; ++epoch) {
          batcher.start_epoch(epoch);
          fused.train_epoch(batcher);
        }
        weights.push_back({model->parameters()[0].detach().clone(),
                           model->parameters()[1].detach().clone()});
      }
    }
    for (size_t k = 1; k < weights.size(); ++k) {
      INFO("run " << k << ", update " << static_cast<int>(update));
      REQUIRE(torch::equal(weights[0][0], weights[k][0]));
      REQUIRE(torch::equal(weights[0][1], weights[k][1]));
    }
    // The runs did train: the weights moved from their seeded start.
    DeviceManager dm(DeviceSettings{"cpu"});
    auto config = tiny_config({{"embedding_size", "8"}});
    InteractionMatrix train(12, 20, users, items);
    ModelContext ctx{config, 12, 20, train, dm};
    dm.seed(5);
    auto fresh = recbole::models::create_model("BPR", ctx);
    REQUIRE_FALSE(torch::equal(fresh->parameters()[1].detach(), weights[0][1]));
  }
}

TEST_CASE("fused sparse_adam follows torch's SparseAdam: only the batch's rows move", "[trainer]") {
  const auto fused = train_small_bpr({{"learner", "sparse_adam"}}, 2);

  // Reference: the same batches through autograd, then SparseAdam written with tensor ops on
  // the rows each batch uses (users; positive and negative items).
  auto config = tiny_config({{"embedding_size", "8"}});
  DeviceManager dm(DeviceSettings{"cpu"});
  std::vector<int32_t> users, items;
  small_interactions(users, items);
  InteractionMatrix train(12, 20, users, items);
  ModelContext ctx{config, 12, 20, train, dm};
  dm.seed(5);
  auto model = recbole::models::create_model("BPR", ctx);
  std::vector<int64_t> counts(20, 0);
  for (int32_t i : items) ++counts[i];
  recbole::data::NegativeSampler sampler(train, "uniform", 1.0, counts);
  recbole::data::TrainBatcher batcher(users, items, &sampler, 1, 4, true,
                                      static_cast<uint64_t>(config.get_int("seed")));
  auto params = model->parameters();
  std::vector<torch::Tensor> m = {torch::zeros_like(params[0]), torch::zeros_like(params[1])};
  std::vector<torch::Tensor> v = {torch::zeros_like(params[0]), torch::zeros_like(params[1])};
  const double lr = config.get_double("learning_rate"), b1 = 0.9, b2 = 0.999, eps = 1e-8;
  int64_t step = 0;
  recbole::data::PairBatch pb;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    batcher.start_epoch(epoch);
    while (batcher.next(pb)) {
      recbole::models::TrainBatch batch;
      batch.users = torch::tensor(pb.users, torch::kInt64);
      batch.pos_items = torch::tensor(pb.pos_items, torch::kInt64);
      batch.neg_items = torch::tensor(pb.neg_items, torch::kInt64);
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      model->calculate_loss(batch).backward();
      ++step;
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      const torch::Tensor rows[2] = {std::get<0>(torch::_unique(batch.users)),
                                     std::get<0>(torch::_unique(torch::cat({batch.pos_items, batch.neg_items})))};
      torch::NoGradGuard no_grad;
      for (int t = 0; t < 2; ++t) {
        const torch::Tensor g = params[t].grad().index_select(0, rows[t]);
        torch::Tensor mt = m[t].index_select(0, rows[t]);
        torch::Tensor vt = v[t].index_select(0, rows[t]);
        mt = mt + (g - mt) * (1 - b1);
        vt = vt + (g * g - vt) * (1 - b2);
        m[t].index_copy_(0, rows[t], mt);
        v[t].index_copy_(0, rows[t], vt);
        params[t].index_add_(0, rows[t], -(lr * std::sqrt(bc2) / bc1) * (mt / (vt.sqrt() + eps)));
      }
    }
  }
  REQUIRE(torch::allclose(fused[0], params[0].detach(), 1e-4, 1e-6));
  REQUIRE(torch::allclose(fused[1], params[1].detach(), 1e-4, 1e-6));
}

TEST_CASE("a diverging run stops with the loss-is-nan error on the fused path as on the generic",
          "[trainer]") {
  // learning_rate 1e30 sends the weights to inf and the scores to NaN within an epoch or two.
  // The fused path's clamp of the scores used to turn NaN into a finite (and negative) loss.
  for (const char* fast : {"true", "false"}) {
    INFO("fast_bpr " << fast);
    auto config = tiny_config({{"epochs", "4"}, {"train_batch_size", "4"}, {"fast_bpr", fast},
                               {"embedding_size", "8"}, {"learning_rate", "1e30"},
                               {"eval_step", "0"},
                               {"checkpoint_dir", (std::filesystem::temp_directory_path() /
                                                   "recbole_diverge").string()}});
    TinyBprRun run(config, 4, 8, {{1, 1, 2, 2, 3, 3, 1, 2}, {1, 2, 3, 4, 5, 6, 3, 1}},
                   {{1, 2, 3}, {4, 5, 1}}, {{1, 2, 3}, {5, 6, 2}}, 1);
    REQUIRE(run.trainer.uses_fused_path() == (std::string(fast) == "true"));
    REQUIRE_THROWS_WITH(run.trainer.fit(), Catch::Contains("Training loss is nan at epoch"));
  }
}

TEST_CASE("sample_num above train_batch_size is a ConfigError naming both keys", "[trainer]") {
  // It used to make batches of one positive and sample_num rows (24 GB at sample_num 10^9).
  auto config = tiny_config({{"train_batch_size", "4"},
                             {"train_neg_sample_args", "{distribution: uniform, sample_num: 5}"}});
  auto make = [&] {
    TinyBprRun run(config, 4, 8, {{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1}, {5}}, {{2}, {6}}, 1);
  };
  REQUIRE_THROWS_AS(make(), recbole::ConfigError);
  REQUIRE_THROWS_WITH(make(), Catch::Contains("sample_num 5 is larger than train_batch_size 4"));
  config = tiny_config({{"train_batch_size", "4"},
                        {"train_neg_sample_args", "{distribution: uniform, sample_num: 4}"}});
  REQUIRE_NOTHROW(make());
}

TEST_CASE("USER_ID_FIELD and ITEM_ID_FIELD naming one column is a ConfigError", "[trainer]") {
  auto config = tiny_config({{"USER_ID_FIELD", "item_id"}});
  REQUIRE_THROWS_AS(recbole::data::DatasetOptions::from_config(config), recbole::ConfigError);
  REQUIRE_THROWS_WITH(recbole::data::DatasetOptions::from_config(config),
                      Catch::Contains("USER_ID_FIELD and ITEM_ID_FIELD"));
}

TEST_CASE("an empty test split is an error before training, not NaN metrics", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_empty_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tiny");
  // Two users with one interaction each: RO 8/1/1 puts every row in train.
  std::ofstream(dir / "tiny" / "tiny.inter")
      << "user_id:token\titem_id:token\trating:float\ttimestamp:float\n1\t1\t3\t1\n2\t2\t3\t2\n";
  auto config = tiny_config({{"data_path", dir.string()},
                             {"epochs", "1"},
                             {"log_dir", (dir / "log").string()},
                             {"checkpoint_dir", (dir / "saved").string()}});
  REQUIRE_THROWS_AS(recbole::run(config), recbole::DataError);
  REQUIRE_THROWS_WITH(recbole::run(config),
                      Catch::Contains("the test split is empty (train 2, valid 0, test 0"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("output paths of the wrong kind are ConfigErrors before any work", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_bad_outputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "a_dir");
  std::ofstream(dir / "a_file") << "keep me\n";
  // data_path does not exist: a check made after loading would report that instead.
  auto with = [&](const std::string& key, const std::string& value) {
    return tiny_config({{"data_path", (dir / "no_data").string()},
                        {"log_dir", (dir / "log").string()},
                        {"checkpoint_dir", (dir / "saved").string()},
                        {key, value}});
  };
  for (const char* key : {"checkpoint_dir", "log_dir"}) {
    INFO(key);
    REQUIRE_THROWS_WITH(recbole::run(with(key, (dir / "a_file").string())),
                        Catch::Contains(std::string(key) + ": \"" + (dir / "a_file").string() +
                                        "\" is a file; expected a directory"));
  }
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", (dir / "a_dir").string())),
                      Catch::Contains("is a directory; expected the path of a JSON file"));
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", (dir / "a_file" / "r.json").string())),
                      Catch::Contains("is a file, not a directory"));
  // Folders that cannot be made or written (used to fail after training as internal errors).
  REQUIRE_THROWS_WITH(recbole::run(with("checkpoint_dir", "/proc/recbole_no_such")),
                      Catch::Contains("checkpoint_dir: cannot create \"/proc/recbole_no_such\""));
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", "/proc/r.json")),
                      Catch::Contains("result_file: cannot create files in \"/proc\""));
  std::ifstream kept(dir / "a_file");
  std::string line;
  std::getline(kept, line);
  REQUIRE(line == "keep me");
  std::filesystem::remove_all(dir);
}

TEST_CASE("an empty train split is an error before training", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_empty_train";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tiny");
  std::ofstream(dir / "tiny" / "tiny.inter")
      << "user_id:token\titem_id:token\n1\t1\n1\t2\n2\t2\n2\t3\n";
  auto config = tiny_config({{"data_path", dir.string()},
                             {"eval_args", "{split: {RS: [0, 0, 1]}}"},
                             {"log_dir", (dir / "log").string()},
                             {"checkpoint_dir", (dir / "saved").string()}});
  REQUIRE_THROWS_WITH(recbole::run(config), Catch::Contains("the train split is empty (train 0"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a checkpoint that cannot be written is an Error, and the previous one stays",
          "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_ckpt_fail";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto config = tiny_config({{"epochs", "1"}, {"train_batch_size", "4"}, {"embedding_size", "8"},
                             {"checkpoint_dir", dir.string()}});
  TinyBprRun run(config, 4, 8, {{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1}, {5}}, {{2}, {6}}, 1);
  const std::string path = (dir / "model.pth").string();
  run.trainer.save_checkpoint(path);
  const auto size = std::filesystem::file_size(path);
  // The temporary file's path is taken (a full disk gave libtorch's writer an error it threw
  // from a destructor: std::terminate).
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp);
  REQUIRE_THROWS_AS(run.trainer.save_checkpoint(path), recbole::Error);
  std::filesystem::create_directories(tmp);
  REQUIRE_THROWS_WITH(run.trainer.save_checkpoint(path),
                      Catch::Contains("cannot write the checkpoint " + path));
  REQUIRE(std::filesystem::file_size(path) == size);
  run.trainer.load_checkpoint(path);  // still a whole checkpoint
  std::filesystem::remove_all(dir);
}

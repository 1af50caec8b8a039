// BPR's fused CPU epoch (models/general/bpr_fused.h): the same training as the generic
// autograd path, bit-identical for any number of threads and either way of gathering, and
// torch's SparseAdam for learner sparse_adam.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <torch/torch.h>

#include "models/general/bpr.h"
#include "models/general/bpr_fused.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "tests/trainer/hand_run.h"

using recbole::DeviceManager;
using recbole::DeviceSettings;
using recbole::data::InteractionMatrix;
using recbole::models::ModelContext;
using recbole::testing::HandRun;
using recbole::testing::tiny_config;

namespace {

// Trains BPR (weights seeded with 5) on the given interactions through the general pipeline;
// returns [user, item] weights and, through `fused`, whether the fused epoch ran.
std::vector<torch::Tensor> train_bpr(const recbole::config::Config& config,
                                     const DeviceSettings& ds, const std::vector<int32_t>& users,
                                     const std::vector<int32_t>& items, int64_t n_users,
                                     int64_t n_items, bool* fused = nullptr) {
  HandRun run(config, n_users, n_items, {users, items}, {}, {}, 5, ds);
  if (fused != nullptr) *fused = run.trainer.uses_fast_epoch();
  run.trainer.fit();
  return {run.model->parameters()[0].detach().clone(), run.model->parameters()[1].detach().clone()};
}

}  // namespace

TEST_CASE("fused and generic BPR paths compute the same training", "[trainer][bpr]") {
  // Same seed, same data: the fused loops must match autograd + torch's Adam or SGD to float
  // rounding (SGD with weight decay moves every row, without it only the batch's rows).
  const std::vector<std::pair<const char*, const char*>> optimizers = {
      {"adam", "0"}, {"sgd", "0"}, {"sgd", "0.01"}};
  for (const auto& [learner, wd] : optimizers) {
    std::vector<torch::Tensor> weights;
    for (const char* fast : {"true", "false"}) {
      auto config =
          tiny_config({{"epochs", "3"},
                       {"train_batch_size", "3"},
                       {"fast_bpr", fast},
                       {"embedding_size", "8"},
                       {"eval_step", "0"},
                       {"learner", learner},
                       {"weight_decay", wd},
                       {"learning_rate", std::string(learner) == "sgd" ? "0.5" : "0.001"},
                       {"checkpoint_dir",
                        (std::filesystem::temp_directory_path() / "recbole_fused").string()}});
      const std::vector<int32_t> users = {1, 1, 2, 2, 3, 3, 1, 2, 3},
                                 items = {1, 2, 3, 4, 5, 6, 3, 1, 2};
      bool fused = false;
      weights.push_back(
          train_bpr(config, recbole::testing::cpu_device(), users, items, 4, 9, &fused)[1]);
      REQUIRE(fused == (std::string(fast) == "true"));
    }
    INFO(learner << ", weight_decay " << wd);
    REQUIRE(torch::allclose(weights[0], weights[1], 1e-4, 1e-6));
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
  extra.insert(extra.end(),
               {{"epochs", "3"},
                {"train_batch_size", "4"},
                {"embedding_size", "8"},
                {"eval_step", "0"},
                {"checkpoint_dir",
                 (std::filesystem::temp_directory_path() / "recbole_fused_threads").string()}});
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

TEST_CASE("the fused BPR path gives bit-identical weights for any number of threads",
          "[trainer][bpr]") {
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
          "[trainer][bpr]") {
  // Big tables use per-sample stashes, small ones read the parameter rows (kStashAboveBytes):
  // both must train bit-identically, for every learner and with 1 or 3 threads.
  using recbole::models::FusedBprTrainer;
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
        recbole::data::NegativeSampler sampler(train, "uniform", 1.0, std::vector<int64_t>(20, 1));
        recbole::data::TrainBatcher batcher(users, items, &sampler, 1, 4, true, 7);
        FusedBprTrainer fused(dynamic_cast<recbole::models::BPR&>(*model), update, 0.01, 0.0,
                              stash_above);
        for (int64_t epoch = 0; epoch < 3; ++epoch) {
          batcher.start_epoch(epoch);
          double loss = 0;
          fused.train_epoch(batcher, loss, [] { return false; });
        }
        weights.push_back(
            {model->parameters()[0].detach().clone(), model->parameters()[1].detach().clone()});
      }
    }
    for (size_t k = 1; k < weights.size(); ++k) {
      INFO("run " << k << ", update " << static_cast<int>(update));
      REQUIRE(torch::equal(weights[0][0], weights[k][0]));
      REQUIRE(torch::equal(weights[0][1], weights[k][1]));
    }
    // The runs did train: the weights moved from their seeded start.
    DeviceManager dm(recbole::testing::cpu_device());
    auto config = tiny_config({{"embedding_size", "8"}});
    InteractionMatrix train(12, 20, users, items);
    ModelContext ctx{config, 12, 20, train, dm};
    dm.seed(5);
    auto fresh = recbole::models::create_model("BPR", ctx);
    REQUIRE_FALSE(torch::equal(fresh->parameters()[1].detach(), weights[0][1]));
  }
}

TEST_CASE("fused sparse_adam follows torch's SparseAdam: only the batch's rows move",
          "[trainer][bpr]") {
  const auto fused = train_small_bpr({{"learner", "sparse_adam"}}, 2);

  // Reference: the same batches through autograd, then SparseAdam written with tensor ops on
  // the rows each batch uses (users; positive and negative items).
  auto config = tiny_config({{"embedding_size", "8"}});
  DeviceManager dm(recbole::testing::cpu_device());
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
      recbole::data::Batch batch;
      batch.users = torch::tensor(pb.users, torch::kInt64);
      batch.items = torch::tensor(pb.pos_items, torch::kInt64);
      batch.neg_items = torch::tensor(pb.neg_items, torch::kInt64);
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      model->calculate_loss(batch).backward();
      ++step;
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      const torch::Tensor rows[2] = {
          std::get<0>(torch::_unique(batch.users)),
          std::get<0>(torch::_unique(torch::cat({batch.items, batch.neg_items})))};
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

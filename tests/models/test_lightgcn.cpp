// LightGCN against an independent dense computation of its propagation and loss, its cache,
// and its key checks.
#include <catch2/catch.hpp>

#include <cmath>

#include <torch/torch.h>

#include "models/general/lightgcn.h"
#include "models/model.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "tests/models/model_fixture.h"

using recbole::testing::dense_adjacency;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

TEST_CASE("LightGCN's loss is BPR on layer-averaged embeddings plus the ego-embedding norm",
          "[models][lightgcn]") {
  TinyData d;
  ModelHarness h(
      recbole::testing::cpu_model_config("LightGCN", {{"n_layers", "3"}, {"reg_weight", "0.01"}}),
      d);
  auto m = h.create();
  auto params = m->named_parameters();
  const torch::Tensor users = params["user_embedding"].detach();
  const torch::Tensor items = params["item_embedding"].detach();

  // Independent: E* = (E + ÂE + Â²E + Â³E) / 4 with a dense Â.
  const torch::Tensor adj = dense_adjacency(d, torch::kFloat32);
  torch::Tensor e = torch::cat({users, items});
  torch::Tensor sum = e.clone();
  for (int l = 0; l < 3; ++l) {
    e = torch::mm(adj, e);
    sum += e;
  }
  const torch::Tensor final_e = sum / 4;
  const torch::Tensor fu = final_e.slice(0, 0, d.n_users), fi = final_e.slice(0, d.n_users);

  recbole::data::Batch b;
  b.users = torch::tensor({1, 5, 5}, torch::kInt64);
  b.items = torch::tensor({2, 7, 3}, torch::kInt64);
  b.neg_items = torch::tensor({9, 1, 20}, torch::kInt64);
  const torch::Tensor u = fu.index_select(0, b.users);
  const torch::Tensor pos = (u * fi.index_select(0, b.items)).sum(1);
  const torch::Tensor neg = (u * fi.index_select(0, b.neg_items)).sum(1);
  const double bpr = (-torch::log(1e-10 + torch::sigmoid(pos - neg))).mean().item<double>();
  // Unsquared Frobenius norms of the batch rows' layer-0 embeddings over the batch size.
  const double reg =
      (users.index_select(0, b.users).norm() + items.index_select(0, b.items).norm() +
       items.index_select(0, b.neg_items).norm())
          .item<double>() /
      3;
  CHECK(m->calculate_loss(b).item<double>() == Approx(bpr + 0.01 * reg).epsilon(1e-5));

  // Scores are dot products of the final embeddings; the cache serves evaluation and the next
  // training batch clears it.
  m->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor scores = m->full_sort_predict(recbole::testing::user_batch(h.device, {4}));
  CHECK(torch::allclose(scores, torch::mm(fu.slice(0, 4, 5), fi.t()), 1e-5, 1e-6));
  torch::Tensor fu2, fi2;
  REQUIRE(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(&fu2, &fi2));
  CHECK(torch::allclose(fu2, fu, 1e-5, 1e-6));
  m->calculate_loss(b);
  CHECK_FALSE(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(&fu2, &fi2));
}

TEST_CASE("LightGCN refuses n_layers 0 naming the model and the key", "[models][lightgcn]") {
  REQUIRE_THROWS_WITH(
      recbole::testing::cpu_model_config("LightGCN", {{"n_layers", "0"}}),
      Catch::Contains("LightGCN key n_layers") && Catch::Contains("expected int >= 1"));
  REQUIRE_THROWS_WITH(recbole::testing::cpu_model_config("LightGCN", {{"reg_weight", "-1"}}),
                      Catch::Contains("LightGCN key reg_weight"));
}

TEST_CASE("LightGCN's step without autograd equals autograd's loss and gradients",
          "[models][lightgcn]") {
  TinyData d;
  for (const std::string pow : {"false", "true"}) {
    DYNAMIC_SECTION("require_pow " << pow) {
      ModelHarness h(
          recbole::testing::cpu_model_config(
              "LightGCN", {{"n_layers", "3"}, {"reg_weight", "0.5"}, {"require_pow", pow}}),
          d);
      auto model = h.create();
      auto* m = dynamic_cast<recbole::models::LightGCN*>(model.get());
      REQUIRE(m != nullptr);
      REQUIRE(m->direct_step_applies() == h.device.device().is_cpu());
      if (!m->direct_step_applies()) return;
      recbole::testing::scramble(*m, 0.5);  // scores away from 0, so that σ's terms all count
      recbole::data::Batch b;
      b.users = torch::tensor({1, 5, 5, 3, 8}, torch::kInt64);  // a repeated user and pair
      b.items = torch::tensor({2, 7, 7, 3, 11}, torch::kInt64);
      b.neg_items = torch::tensor({9, 1, 20, 4, 2}, torch::kInt64);
      const torch::Tensor loss = m->calculate_loss(b);
      loss.backward();
      std::vector<torch::Tensor> expected;
      for (torch::Tensor p : m->parameters()) {
        expected.push_back(p.grad().clone());
        p.mutable_grad() = torch::Tensor();
      }
      // Worker w owns rows by the graph's non-zeros: any pool size gives the same sums.
      recbole::ThreadPool& pool = recbole::ThreadPool::instance();
      const int before = pool.threads();
      std::vector<torch::Tensor> first;
      for (const int threads : {1, 2, 3}) {
        INFO(threads << " threads");
        pool.set_threads(threads);
        const torch::Tensor direct = m->direct_backward(b);
        CHECK(direct.item<float>() == Approx(loss.item<float>()).epsilon(1e-6));
        const std::vector<torch::Tensor> params = m->parameters();
        for (size_t k = 0; k < params.size(); ++k) {
          INFO("parameter " << k);
          REQUIRE(params[k].grad().defined());
          CHECK(torch::allclose(params[k].grad(), expected[k], 1e-5, 1e-7));
          if (first.size() < params.size())
            first.push_back(params[k].grad().clone());
          else
            CHECK(torch::equal(params[k].grad(), first[k]));
        }
      }
      pool.set_threads(before);
      // The step drops the evaluation cache, as calculate_loss does.
      m->eval();
      torch::NoGradGuard no_grad;
      m->full_sort_predict(recbole::testing::user_batch(h.device, {4}));
      torch::Tensor fu, fi;
      REQUIRE(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(&fu, &fi));
      m->direct_backward(b);
      CHECK_FALSE(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(&fu, &fi));
    }
  }
}

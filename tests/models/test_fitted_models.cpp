// Numeric checks of the fitted-once models on small cases computed independently.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "models/general/admmslim.h"
#include "models/general/ease.h"
#include "models/general/fitted_support.h"
#include "models/general/itemknn.h"
#include "models/general/pop.h"
#include "models/general/random.h"
#include "models/general/slimelastic.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"

using recbole::data::InteractionMatrix;
using recbole::testing::all_scores;
using recbole::testing::model_config;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

namespace {

// X as a dense float64 [n_users, n_items] CPU tensor.
torch::Tensor dense(const InteractionMatrix& x) {
  std::vector<int64_t> users(x.n_users());
  for (int64_t u = 0; u < x.n_users(); ++u) users[u] = u;
  return recbole::data::dense_rows(x, users).to(torch::kFloat64);
}

// 3 items (+ padding) over 3 users (+ padding): u1 {1,2}, u2 {1,2,3}, u3 {2,3}.
struct ThreeByThree {
  int64_t n_users = 4, n_items = 4;
  InteractionMatrix train{4, 4, {1, 1, 2, 2, 2, 3, 3}, {1, 2, 1, 2, 3, 2, 3}};
};

}  // namespace

TEST_CASE("Random: independent per user, same in any block, seeded", "[models][random]") {
  TinyData d;
  ModelHarness h(model_config("Random"), d);
  auto m = h.create();
  m->fit();
  torch::Tensor s = all_scores(*m, h.device, d.n_users);
  CHECK(s.min().item<float>() >= 0.0f);
  CHECK(s.max().item<float>() < 1.0f);
  // Two users never share a ranking (RecBole gives a whole batch one vector).
  CHECK_FALSE(torch::equal(s[0].argsort(), s[1].argsort()));
  // User 5 alone, or inside another block, gets exactly the same scores.
  torch::Tensor alone = m->full_sort_predict(recbole::testing::user_batch(h.device, {5})).cpu();
  torch::Tensor block =
      m->full_sort_predict(recbole::testing::user_batch(h.device, {9, 5, 2})).cpu();
  CHECK(torch::equal(alone[0], s[4]));
  CHECK(torch::equal(block[1], s[4]));
  // Another seed, another ranking.
  ModelHarness other(model_config("Random", {{"seed", "7"}}), d);
  CHECK_FALSE(torch::equal(all_scores(*other.create(), other.device, d.n_users), s));
}

TEST_CASE("Pop: count of training users per item over the maximum, same for every user",
          "[models][pop]") {
  TinyData d;
  ModelHarness h(model_config("Pop"), d);
  auto m = h.create();
  m->fit();
  const auto deg = d.train.item_degrees();
  const double max_deg = static_cast<double>(*std::max_element(deg.begin(), deg.end()));
  torch::Tensor s = all_scores(*m, h.device, d.n_users);
  for (int64_t i = 0; i < d.n_items; ++i) CHECK(s[0][i].item<float>() == Approx(deg[i] / max_deg));
  CHECK(torch::equal(s[0], s[10]));
  auto* pop = dynamic_cast<recbole::models::Pop*>(m.get());
  REQUIRE(pop != nullptr);
  CHECK(pop->item_count().cpu()[1].item<int64_t>() == deg[1]);
}

TEST_CASE("ItemKNN: shrunk cosine and top-k on a 3×3 case, item and user modes",
          "[models][itemknn]") {
  ThreeByThree t;
  TinyData unused;
  // Item columns: i1 = {u1,u2}, i2 = {u1,u2,u3}, i3 = {u2,u3}; dots (1,2)=2, (1,3)=1, (2,3)=2.
  const float s12 = 2.0f / (std::sqrt(2.0f) * std::sqrt(3.0f) + 1.0f + 1e-6f);
  const float s13 = 1.0f / (2.0f + 1.0f + 1e-6f);
  const float s23 = s12;
  SECTION("item mode, k = 2: every similarity kept") {
    auto config = model_config("ItemKNN", {{"k", "2"}, {"shrink", "1.0"}});
    recbole::DeviceManager dm = recbole::DeviceManager::from_config(config);
    recbole::models::ModelContext ctx{config, t.n_users, t.n_items, t.train, dm};
    recbole::models::ItemKNN m(ctx);
    m.fit();
    torch::Tensor w = m.dense_weights();
    torch::Tensor expected = torch::zeros({4, 4});
    expected[1][2] = s12, expected[2][1] = s12, expected[1][3] = s13, expected[3][1] = s13;
    expected[2][3] = s23, expected[3][2] = s23;
    CHECK(torch::allclose(w, expected, 1e-6, 1e-7));
    // u3 = {2, 3}: scores = W[2, :] + W[3, :].
    torch::Tensor s = m.full_sort_predict(recbole::testing::user_batch(dm, {3})).cpu();
    CHECK(s[0][1].item<float>() == Approx(s12 + s13));
    CHECK(s[0][2].item<float>() == Approx(s23));
    CHECK(s[0][3].item<float>() == Approx(s23));
  }
  SECTION("item mode, k = 1: ties go to the smaller id") {
    auto config = model_config("ItemKNN", {{"k", "1"}, {"shrink", "1.0"}});
    recbole::DeviceManager dm = recbole::DeviceManager::from_config(config);
    recbole::models::ModelContext ctx{config, t.n_users, t.n_items, t.train, dm};
    recbole::models::ItemKNN m(ctx);
    m.fit();
    torch::Tensor w = m.dense_weights();
    // Target 1: neighbour 2; target 2: 1 and 3 tie, 1 kept; target 3: neighbour 2.
    CHECK(w[2][1].item<float>() == Approx(s12));
    CHECK(w[1][2].item<float>() == Approx(s12));
    CHECK(w[3][2].item<float>() == 0.0f);
    CHECK(w[2][3].item<float>() == Approx(s23));
    CHECK(w.count_nonzero().item<int64_t>() == 3);
  }
  SECTION("user mode, k = 1") {
    auto config = model_config("ItemKNN", {{"k", "1"}, {"shrink", "0.0"}, {"knn_method", "user"}});
    recbole::DeviceManager dm = recbole::DeviceManager::from_config(config);
    recbole::models::ModelContext ctx{config, t.n_users, t.n_items, t.train, dm};
    recbole::models::ItemKNN m(ctx);
    m.fit();
    torch::Tensor w = m.dense_weights();
    REQUIRE(w.sizes() == torch::IntArrayRef({4, 4}));
    // Users: u1 {1,2}, u2 {1,2,3}, u3 {2,3}: sim(1,2) = 2/√6 = sim(2,3), sim(1,3) = 1/2.
    const float a = 2.0f / (std::sqrt(2.0f) * std::sqrt(3.0f) + 1e-6f);
    CHECK(w[1][2].item<float>() == Approx(a));  // u1's neighbour: u2
    CHECK(w[2][1].item<float>() == Approx(a));  // u2: u1 and u3 tie, u1 kept
    CHECK(w[3][2].item<float>() == Approx(a));  // u3's neighbour: u2
    CHECK(w.count_nonzero().item<int64_t>() == 3);
    // Scores of u1 = a · X[u2, :] = a on items 1..3.
    torch::Tensor s = m.full_sort_predict(recbole::testing::user_batch(dm, {1})).cpu();
    CHECK(s[0][0].item<float>() == 0.0f);
    for (int i = 1; i <= 3; ++i) CHECK(s[0][i].item<float>() == Approx(a));
  }
}

TEST_CASE("EASE with reg_weight 0 is a ConfigError naming the key, not a linear-algebra failure",
          "[models][ease]") {
  TinyData d;  // item 0 (padding) has no interactions: XᵀX is singular
  ModelHarness h(model_config("EASE", {{"reg_weight", "0"}}), d);
  auto m = h.create();
  REQUIRE_THROWS_AS(m->fit(), recbole::ConfigError);
  REQUIRE_THROWS_WITH(m->fit(), Catch::Contains("expected reg_weight > 0"));
}

TEST_CASE("EASE: closed form equals one ridge regression per item without that item",
          "[models][ease]") {
  TinyData d;
  ModelHarness h(model_config("EASE", {{"reg_weight", "3.5"}}), d);
  auto m = h.create();
  m->fit();
  auto* ease = dynamic_cast<recbole::models::EASE*>(m.get());
  REQUIRE(ease != nullptr);
  torch::Tensor b = ease->item_similarity().cpu().to(torch::kFloat64);
  REQUIRE(b.sizes() == torch::IntArrayRef({d.n_items, d.n_items}));
  // Column j of B minimises ‖x_j − X b‖² + λ‖b‖² subject to b_j = 0: a ridge regression of x_j
  // on the other columns, solved directly here.
  torch::Tensor x = dense(d.train);
  for (int64_t j : {1, 2, 7, 26, 28}) {
    std::vector<int64_t> others;
    for (int64_t i = 0; i < d.n_items; ++i)
      if (i != j) others.push_back(i);
    torch::Tensor idx = torch::tensor(others, torch::kInt64);
    torch::Tensor xo = x.index_select(1, idx);
    torch::Tensor a = torch::matmul(xo.t(), xo) + 3.5 * torch::eye(d.n_items - 1, torch::kFloat64);
    torch::Tensor coef = torch::linalg_solve(a, torch::matmul(xo.t(), x.select(1, j)), true);
    CHECK(b[j][j].item<double>() == 0.0);
    CHECK(torch::allclose(b.select(1, j).index_select(0, idx), coef, 1e-5, 1e-6));
  }
  // Scores are X_u · B.
  torch::Tensor s = all_scores(*m, h.device, d.n_users).to(torch::kFloat64);
  CHECK(torch::allclose(s, torch::matmul(x.slice(0, 1), b), 1e-5, 1e-5));
}

TEST_CASE("EASE and ADMMSLIM fail early with a clear error when n_items² will not fit",
          "[models][ease][admmslim]") {
  const int64_t n_items = int64_t(1) << 22;  // B alone would take 64 TiB
  InteractionMatrix train(3, n_items, {1, 2}, {5, 6});
  if (recbole::models::available_memory_bytes() < 0) return;  // nothing to compare against
  for (const char* name : {"EASE", "ADMMSLIM"}) {
    auto config = model_config(name);
    recbole::DeviceSettings cpu;
    cpu.device = "cpu";
    recbole::DeviceManager dm(cpu);
    recbole::models::ModelContext ctx{config, 3, n_items, train, dm};
    auto m = recbole::models::create_model(name, ctx);  // construction allocates no n² buffer
    try {
      m->fit();
      FAIL("expected recbole::Error");
    } catch (const recbole::Error& e) {
      const std::string msg = e.what();
      CHECK(msg.find(std::string(name) + ": fitting needs") != std::string::npos);
      CHECK(msg.find("GiB") != std::string::npos);
      CHECK(msg.find("n_items = 4194304") != std::string::npos);
      CHECK(msg.find("available") != std::string::npos);
    }
  }
}

TEST_CASE("ADMMSLIM: without L1, weights or positivity it converges to EASE",
          "[models][admmslim]") {
  TinyData d;
  // lambda1 = 0, alpha = 0 (μ^0 = 1: a plain ridge λ2·I), no clipping: ADMM's fixed point is the
  // zero-diagonal ridge solution, i.e. EASE with reg_weight = lambda2.
  ModelHarness h(model_config("ADMMSLIM", {{"lambda1", "0.0"},
                                           {"lambda2", "4.0"},
                                           {"alpha", "0.0"},
                                           {"rho", "20.0"},
                                           {"k", "400"},
                                           {"positive_only", "false"}}),
                 d);
  auto m = h.create();
  m->fit();
  ModelHarness he(model_config("EASE", {{"reg_weight", "4.0"}}), d);
  auto e = he.create();
  e->fit();
  torch::Tensor c = dynamic_cast<recbole::models::ADMMSLIM&>(*m).item_similarity().cpu();
  torch::Tensor b = dynamic_cast<recbole::models::EASE&>(*e).item_similarity().cpu();
  CHECK(torch::allclose(c, b, 1e-3, 1e-4));
}

TEST_CASE("ADMMSLIM: positive_only keeps C non-negative with a near-zero diagonal, centred or not",
          "[models][admmslim]") {
  TinyData d;
  for (const char* center : {"false", "true"}) {
    ModelHarness h(
        model_config(
            "ADMMSLIM",
            {{"rho", "50.0"}, {"lambda2", "5.0"}, {"lambda1", "0.5"}, {"center_columns", center}}),
        d);
    auto m = h.create();
    m->fit();
    torch::Tensor c = dynamic_cast<recbole::models::ADMMSLIM&>(*m).item_similarity().cpu();
    CHECK(c.min().item<float>() >= 0.0f);
    CHECK(c.diagonal().abs().max().item<float>() < 1e-2f);
    CHECK(c.count_nonzero().item<int64_t>() > 0);
    // Scores: X_u·C, or (X_u − μ)·C + μ when centred.
    torch::Tensor x = dense(d.train).to(torch::kFloat32).slice(0, 1);
    torch::Tensor expected = torch::matmul(x, c);
    if (std::string(center) == "true") {
      const auto deg = d.train.item_degrees();
      torch::Tensor mu = torch::tensor(deg, torch::kInt64).to(torch::kFloat32) / double(d.n_users);
      expected = torch::matmul(x - mu, c) + mu;
    }
    CHECK(torch::allclose(all_scores(*m, h.device, d.n_users), expected, 1e-4, 1e-5));
  }
}

namespace {

// The sklearn-scaled elastic-net objective for column j, in float64.
double objective(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& w,
                 double alpha, double l1_ratio) {
  const double n = static_cast<double>(x.size(0));
  torch::Tensor r = y - torch::matmul(x, w);
  return (r.dot(r).item<double>() / (2 * n) + alpha * l1_ratio * w.abs().sum().item<double>() +
          0.5 * alpha * (1 - l1_ratio) * w.dot(w).item<double>());
}

}  // namespace

TEST_CASE("SLIMElastic: each column satisfies the elastic-net optimality conditions",
          "[models][slimelastic]") {
  TinyData d;
  const double alpha = 0.01, l1_ratio = 0.1;
  using recbole::models::SlimSolver;
  for (const char* positive : {"true", "false"})
    for (SlimSolver solver : {SlimSolver::kSparse, SlimSolver::kGram}) {
      ModelHarness h(model_config("SLIMElastic", {{"alpha", "0.01"},
                                                  {"l1_ratio", "0.1"},
                                                  {"positive_only", positive},
                                                  {"max_iter", "10000"},
                                                  {"tol", "1e-12"}}),
                     d);
      auto m = std::make_shared<recbole::models::SLIMElastic>(h.ctx, solver);
      m->fit();
      auto& slim = *m;
      REQUIRE(slim.use_gram(d.n_items) == (solver == SlimSolver::kGram));
      torch::Tensor w = slim.dense_weights().to(torch::kFloat64);
      torch::Tensor x = dense(d.train);
      const double n = static_cast<double>(d.n_users);
      if (std::string(positive) == "true") CHECK(w.min().item<double>() >= 0.0);
      for (int64_t j = 0; j < d.n_items; ++j) {
        INFO("item " << j << ", positive_only " << positive << ", Gram solver "
                     << slim.use_gram(d.n_items));
        CHECK(slim.reports()[j].converged);
        CHECK(w[j][j].item<double>() == 0.0);  // hide_item
        torch::Tensor xh = x.clone();
        xh.select(1, j).zero_();
        torch::Tensor y = x.select(1, j);
        torch::Tensor wj = w.select(1, j);
        // KKT: g = Xᵀ(y − Xw)/n − α(1−ρ)w; active w_i: g_i = α·ρ·sign(w_i); inactive: g_i ≤ α·ρ
        // (|g_i| ≤ α·ρ without positivity).
        torch::Tensor g =
            torch::matmul(xh.t(), y - torch::matmul(xh, wj)) / n - alpha * (1 - l1_ratio) * wj;
        for (int64_t i = 0; i < d.n_items; ++i) {
          const double wi = wj[i].item<double>(), gi = g[i].item<double>();
          if (wi != 0.0)
            CHECK(gi == Approx(alpha * l1_ratio * (wi > 0 ? 1 : -1)).margin(1e-7));
          else if (std::string(positive) == "true")
            CHECK(gi <= alpha * l1_ratio + 1e-7);
          else
            CHECK(std::fabs(gi) <= alpha * l1_ratio + 1e-7);
        }
        // And no small move of one coordinate lowers the objective.
        const double f0 = objective(xh, y, wj, alpha, l1_ratio);
        for (int64_t i : {1, 3, 5}) {
          if (i == j) continue;
          for (double step : {1e-3, -1e-3}) {
            torch::Tensor moved = wj.clone();
            moved[i] += step;
            if (std::string(positive) == "true" && moved[i].item<double>() < 0) continue;
            CHECK(objective(xh, y, moved, alpha, l1_ratio) >= f0 - 1e-12);
          }
        }
      }
      // Scores are X_u · W.
      CHECK(torch::allclose(all_scores(*m, h.device, d.n_users).to(torch::kFloat64),
                            torch::matmul(x.slice(0, 1), w), 1e-5, 1e-6));
    }
}

TEST_CASE("SLIMElastic: a single co-occurring column has the closed-form coefficient",
          "[models][slimelastic]") {
  // Items 1 and 2 are held by the same 4 users, item 3 by one other user: the regression of
  // item 1 has one useful column (item 2): w = max(4 − l1, 0) / (4 + l2), with sklearn's scaling
  // l1 = α·ρ·n_users, l2 = α(1−ρ)·n_users.
  InteractionMatrix train(6, 4, {1, 1, 2, 2, 3, 3, 4, 4, 5}, {1, 2, 1, 2, 1, 2, 1, 2, 3});
  auto config =
      model_config("SLIMElastic", {{"alpha", "0.2"}, {"l1_ratio", "0.5"}, {"tol", "1e-10"}});
  recbole::DeviceManager dm = recbole::DeviceManager::from_config(config);
  recbole::models::ModelContext ctx{config, 6, 4, train, dm};
  recbole::models::SLIMElastic m(ctx);
  m.fit();
  torch::Tensor w = m.dense_weights();
  const double l1 = 0.2 * 0.5 * 6, l2 = 0.2 * 0.5 * 6;
  CHECK(w[2][1].item<float>() == Approx((4 - l1) / (4 + l2)));
  CHECK(w[1][2].item<float>() == Approx((4 - l1) / (4 + l2)));
  CHECK(w[3][1].item<float>() == 0.0f);
  CHECK(w.select(1, 3).abs().sum().item<float>() == 0.0f);
  CHECK(m.reports()[1].sweeps <= 3);
}

TEST_CASE("SLIMElastic: the sparse and Gram solvers agree at the default settings",
          "[models][slimelastic]") {
  TinyData d;
  using recbole::models::SlimSolver;
  ModelHarness h(model_config("SLIMElastic", {{"alpha", "0.02"}}), d);
  recbole::models::SLIMElastic sparse(h.ctx, SlimSolver::kSparse), gram(h.ctx, SlimSolver::kGram);
  sparse.fit();
  gram.fit();
  torch::Tensor a = sparse.dense_weights(), b = gram.dense_weights();
  CHECK(a.count_nonzero().item<int64_t>() > 0);
  // Both stop at sklearn's duality-gap test (tol 1e-4 relative), not at the exact minimiser.
  CHECK(torch::allclose(a, b, 1e-3, 1e-4));
  // The automatic choice takes the Gram solver for a small catalogue only.
  recbole::models::SLIMElastic automatic(h.ctx);
  CHECK(automatic.use_gram(d.n_items));
  CHECK_FALSE(automatic.use_gram(int64_t(1) << 20));  // 8 TiB Gram matrix
}

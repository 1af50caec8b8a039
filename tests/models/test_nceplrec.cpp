// NCEPLRec against the same formula computed densely with libtorch's exact SVD, its randomized
// SVD against the exact one, and its rank bound.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/general/nceplrec.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"

using recbole::testing::all_scores;
using recbole::testing::dense_train;
using recbole::testing::model_config;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

namespace {

// RecBole's NCE-PLRec scores, dense, with an exact SVD: [n_users, n_items] float64.
torch::Tensor dense_scores(const TinyData& d, double beta, int64_t rank, double reg) {
  const torch::Tensor r = dense_train(d);
  const torch::Tensor pop = r.sum(0);
  const torch::Tensor w =
      torch::clamp_min(torch::log(static_cast<double>(d.n_users) / pop.pow(beta)), 0.0);
  const torch::Tensor dmat = torch::where(r > 0, w.unsqueeze(0).expand_as(r), torch::zeros_like(r));
  auto [u, s, vh] = torch::linalg_svd(dmat, /*full_matrices=*/false, c10::nullopt);
  const torch::Tensor v_star = vh.slice(0, 0, rank).t() * s.slice(0, 0, rank).sqrt().unsqueeze(0);
  const torch::Tensor q = r.matmul(v_star);
  const torch::Tensor gram = q.t().matmul(q) + reg * torch::eye(rank, torch::kFloat64);
  const torch::Tensor w_mat = torch::linalg_solve(gram, q.t().matmul(r), /*left=*/true);
  return q.matmul(w_mat);
}

}  // namespace

TEST_CASE("NCEPLRec at full rank scores as the dense formula with an exact SVD",
          "[models][nceplrec]") {
  TinyData d;
  // min(40, 30) = 30: the sketch spans every column, so the randomized SVD is exact.
  for (const char* beta : {"1.0", "0.6"}) {
    DYNAMIC_SECTION("beta " << beta) {
      ModelHarness h(
          model_config("NCEPLRec", {{"rank", "30"}, {"beta", beta}, {"reg_weight", "3"}}), d);
      auto m = h.create();
      m->fit();
      const torch::Tensor got = all_scores(*m, h.device, d.n_users).to(torch::kFloat64);
      const torch::Tensor want = dense_scores(d, std::stod(beta), 30, 3.0).slice(0, 1, d.n_users);
      CHECK(torch::allclose(got, want, 1e-4, 1e-5));
      CHECK((got - want).abs().max().item<double>() < 1e-4);
    }
  }
}

TEST_CASE("NCEPLRec's randomized SVD finds the leading singular values of D",
          "[models][nceplrec]") {
  TinyData d;
  ModelHarness h(model_config("NCEPLRec", {{"rank", "5"}}), d);
  auto m = h.create();
  auto* model = dynamic_cast<recbole::models::NCEPLRec*>(m.get());
  REQUIRE(model != nullptr);
  const auto dmat = model->weighted_matrix();
  // D's largest entry: log(40 / 1) for an item seen once.
  CHECK(dmat.coeffs().maxCoeff() <= std::log(40.0) + 1e-12);
  const torch::Tensor dense = torch::from_blob(const_cast<double*>(Eigen::MatrixXd(dmat).data()),
                                               {d.n_items, d.n_users}, torch::kFloat64)
                                  .t()
                                  .clone();
  const torch::Tensor exact = torch::linalg_svdvals(dense, c10::nullopt);
  // Both orientations (fewer rows than columns is transposed first) and both n_iter rules.
  for (bool transposed : {false, true}) {
    const auto svd = transposed
                         ? recbole::models::randomized_svd(
                               Eigen::SparseMatrix<double, Eigen::RowMajor>(dmat.transpose()), 5, 7)
                         : recbole::models::randomized_svd(dmat, 5, 7);
    REQUIRE(svd.singular_values.size() == 5);
    REQUIRE(svd.right_vectors.rows() == (transposed ? d.n_users : d.n_items));
    for (int k = 0; k < 5; ++k)
      CHECK(svd.singular_values[k] == Approx(exact[k].item<double>()).epsilon(1e-6));
    // Orthonormal right vectors.
    const Eigen::MatrixXd gram = svd.right_vectors.transpose() * svd.right_vectors;
    CHECK((gram - Eigen::MatrixXd::Identity(5, 5)).cwiseAbs().maxCoeff() < 1e-10);
  }
  // The same seed gives the same fit; the fit is deterministic.
  m->fit();
  const torch::Tensor first = all_scores(*m, h.device, d.n_users);
  m->fit();
  CHECK(torch::equal(all_scores(*m, h.device, d.n_users), first));
}

TEST_CASE("NCEPLRec: a rank above min(n_users, n_items) is a ConfigError naming the limit",
          "[models][nceplrec]") {
  TinyData d;
  ModelHarness h(model_config("NCEPLRec", {{"rank", "31"}}), d);
  try {
    h.create();
    FAIL("expected a ConfigError");
  } catch (const recbole::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("rank") != std::string::npos);
    CHECK(what.find("rank <= 30") != std::string::npos);
  }
  ModelHarness ok(model_config("NCEPLRec", {{"rank", "30"}}), d);
  CHECK_NOTHROW(ok.create());
  CHECK_THROWS_AS(ModelHarness(model_config("NCEPLRec", {{"rank", "0"}}), d).create(),
                  recbole::ConfigError);
}

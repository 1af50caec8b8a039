// The graph models (NGCF, SGL, NCL) and their k-means against independent dense formulas on the
// tiny dataset: propagation, losses, the perturbed views, the E-step, and bad keys.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/general/ncl.h"
#include "models/general/ngcf.h"
#include "models/general/sgl.h"
#include "models/general/spectralcf.h"
#include "models/layers/kmeans.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "tests/models/model_fixture.h"

namespace layers = recbole::models::layers;
using recbole::testing::cpu_model_config;
using recbole::testing::dense;
using recbole::testing::dense_adjacency;
using recbole::testing::dense_graph;
using recbole::testing::ModelHarness;
using recbole::testing::param;
using recbole::testing::TinyData;

namespace {

// A pairwise batch on the CPU.
recbole::data::Batch pair_batch() {
  recbole::data::Batch b;
  b.users = torch::tensor(std::vector<int64_t>{1, 5, 5, 17, 39}, torch::kInt64);
  b.items = torch::tensor(std::vector<int64_t>{2, 8, 3, 20, 1}, torch::kInt64);
  b.neg_items = torch::tensor(std::vector<int64_t>{9, 0, 29, 4, 13}, torch::kInt64);
  return b;
}

// Σ_b −log(exp(cos(a_b, p_b)/τ) / Σ_m exp(cos(a_b, c_m)/τ)), written out.
torch::Tensor info_nce(const torch::Tensor& a, const torch::Tensor& p, const torch::Tensor& c,
                       double tau) {
  auto unit = [](const torch::Tensor& x) { return x / x.norm(2, 1, true).clamp_min(1e-12); };
  const torch::Tensor num = torch::exp((unit(a) * unit(p)).sum(1) / tau);
  const torch::Tensor den = torch::exp(torch::matmul(unit(a), unit(c).t()) / tau).sum(1);
  return -torch::log(num / den).sum();
}

// EmbLoss: Σ ‖E_j‖ / rows(E_last).
torch::Tensor emb(const std::vector<torch::Tensor>& es) {
  torch::Tensor s = torch::zeros({}, torch::kFloat64);
  for (const auto& e : es) s = s + e.norm();
  return s / static_cast<double>(es.back().size(0));
}

void require_config_error(const std::string& model, const std::string& key,
                          const std::string& value) {
  try {
    cpu_model_config(model, {{key, value}});
    FAIL("expected a ConfigError for " << model << " " << key << " = " << value);
  } catch (const recbole::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains(key));
  }
}

}  // namespace

TEST_CASE("NGCF propagates and scores as the dense formula", "[models][graph][ngcf]") {
  TinyData d;
  ModelHarness h(
      cpu_model_config("NGCF", {{"hidden_size_list", "[8, 6]"}, {"embedding_size", "8"}}), d);
  auto m = h.create();
  m->eval();  // message dropout off
  auto* ngcf = dynamic_cast<recbole::models::NGCF*>(m.get());
  REQUIRE(ngcf != nullptr);
  auto [users, items] = ngcf->propagate();
  REQUIRE(users.sizes() == torch::IntArrayRef({d.n_users, 8 + 8 + 6}));

  const torch::Tensor a = dense_adjacency(d);
  torch::Tensor e = torch::cat({param(*m, "user_embedding"), param(*m, "item_embedding")});
  std::vector<torch::Tensor> all{e};
  for (int k = 0; k < 2; ++k) {
    const std::string w1 = "w1_" + std::to_string(k), w2 = "w2_" + std::to_string(k);
    const torch::Tensor s = torch::matmul(a, e);
    torch::Tensor h1 =
        torch::matmul(e + s, param(*m, w1 + ".weight").t()) + param(*m, w1 + ".bias");
    torch::Tensor h2 =
        torch::matmul(s * e, param(*m, w2 + ".weight").t()) + param(*m, w2 + ".bias");
    torch::Tensor hsum = h1 + h2;
    hsum = torch::where(hsum > 0, hsum, 0.2 * hsum);
    e = hsum / hsum.norm(2, 1, true).clamp_min(1e-12);
    all.push_back(e);
  }
  const torch::Tensor expected = torch::cat(all, 1);
  CHECK(torch::allclose(torch::cat({users, items}).to(torch::kFloat64), expected, 1e-4, 1e-5));

  // The loss: BPR (mean, with 1e-10) + reg_weight · EmbLoss of the final rows.
  const auto b = pair_batch();
  const torch::Tensor fu = expected.index_select(0, b.users);
  const torch::Tensor fp = expected.index_select(0, b.items + d.n_users);
  const torch::Tensor fn = expected.index_select(0, b.neg_items + d.n_users);
  const torch::Tensor diff = (fu * fp).sum(1) - (fu * fn).sum(1);
  const double want =
      (-torch::log(1e-10 + torch::sigmoid(diff)).mean() + 1e-5 * emb({fu, fp, fn})).item<double>();
  CHECK(m->calculate_loss(b).item<double>() == Approx(want).epsilon(1e-4));

  // Training mode with message dropout changes the embeddings; evaluation does not.
  m->train();
  auto [tu, ti] = ngcf->propagate();
  CHECK_FALSE(torch::allclose(tu, users));
}

TEST_CASE("NGCF's node dropout drops graph entries only while training", "[models][graph][ngcf]") {
  TinyData d;
  ModelHarness h(cpu_model_config("NGCF", {{"node_dropout", "0.5"}, {"message_dropout", "0"}}), d);
  auto m = h.create();
  auto* ngcf = dynamic_cast<recbole::models::NGCF*>(m.get());
  m->eval();
  auto [e1, i1] = ngcf->propagate();
  auto [e2, i2] = ngcf->propagate();
  CHECK(torch::equal(e1, e2));
  m->train();
  auto [t1, j1] = ngcf->propagate();
  CHECK_FALSE(torch::allclose(t1, e1));
  CHECK(torch::isfinite(t1).all().item<bool>());
}

TEST_CASE("NGCF: a dropout of 1 or an empty layer is a ConfigError naming the model and key",
          "[models][graph][ngcf]") {
  require_config_error("NGCF", "message_dropout", "1.0");
  require_config_error("NGCF", "node_dropout", "-0.1");
  require_config_error("NGCF", "hidden_size_list", "[64, 0]");
}

TEST_CASE("SGL's views: ED keeps floor(0.9 |E|) pairs, ND isolates dropped nodes, seeded by epoch",
          "[models][graph][sgl]") {
  TinyData d;
  ModelHarness h(cpu_model_config("SGL"), d);
  auto m = h.create();
  auto* sgl = dynamic_cast<recbole::models::SGL*>(m.get());
  REQUIRE(sgl != nullptr);
  const auto v1 = sgl->view_graphs(3, 1);
  REQUIRE(v1.size() == 1);
  const auto kept = static_cast<int64_t>(static_cast<double>(d.train.nnz()) * 0.9);
  CHECK(v1[0].nnz() == 2 * kept);
  const torch::Tensor g = dense(v1[0]);
  CHECK(torch::equal(g, g.t()));
  // Each kept entry is 1/sqrt(deg_u deg_i) with the view's own degrees.
  const torch::Tensor bin = (g != 0).to(torch::kFloat64);
  const torch::Tensor inv = (bin.sum(1) + 1e-7).pow(-0.5);
  CHECK(torch::allclose(g, inv.unsqueeze(1) * bin * inv.unsqueeze(0), 1e-6, 1e-7));
  CHECK(torch::equal(dense(sgl->view_graphs(3, 1)[0]), g));        // repeats
  CHECK_FALSE(torch::equal(dense(sgl->view_graphs(3, 2)[0]), g));  // the other view differs
  CHECK_FALSE(torch::equal(dense(sgl->view_graphs(4, 1)[0]), g));  // so does the next epoch

  ModelHarness hn(cpu_model_config("SGL", {{"type", "ND"}, {"drop_ratio", "0.25"}}), d);
  auto mn = hn.create();
  const torch::Tensor gn =
      dense(dynamic_cast<recbole::models::SGL*>(mn.get())->view_graphs(0, 1)[0]);
  // floor(40 · 0.25) = 10 user ids and floor(30 · 0.25) = 7 item ids dropped (pads may be among
  // them): at least 10 − 1 users and 7 − 1 items with training pairs lose every edge.
  int64_t users_out = 0, items_out = 0;
  for (int32_t u = 1; u < d.n_users; ++u)
    if (d.train.row_size(u) > 0 && gn[u].abs().sum().item<double>() == 0) ++users_out;
  const std::vector<int64_t> deg = d.train.item_degrees();
  for (int32_t i = 1; i < d.n_items; ++i)
    if (deg[static_cast<size_t>(i)] > 0 && gn[d.n_users + i].abs().sum().item<double>() == 0)
      ++items_out;
  CHECK(users_out >= 9);
  CHECK(items_out >= 6);

  ModelHarness hr(cpu_model_config("SGL", {{"type", "RW"}, {"n_layers", "2"}}), d);
  auto mr = hr.create();
  const auto rw = dynamic_cast<recbole::models::SGL*>(mr.get())->view_graphs(0, 1);
  REQUIRE(rw.size() == 2);
  CHECK_FALSE(torch::equal(dense(rw[0]), dense(rw[1])));
}

TEST_CASE("SGL's loss is the BPR sum + EmbLoss + InfoNCE sums over the second view",
          "[models][graph][sgl]") {
  TinyData d;
  ModelHarness h(cpu_model_config("SGL", {{"n_layers", "2"}, {"ssl_weight", "0.3"}}), d);
  auto m = h.create();
  auto* sgl = dynamic_cast<recbole::models::SGL*>(m.get());
  m->train();
  const auto b = pair_batch();
  const double got = m->calculate_loss(b).item<double>();  // builds epoch 0's views

  const torch::Tensor e0 = torch::cat({param(*m, "user_embedding"), param(*m, "item_embedding")});
  auto lightgcn = [&](const torch::Tensor& a) {
    const torch::Tensor e1 = torch::matmul(a, e0);
    return (e0 + e1 + torch::matmul(a, e1)) / 3.0;
  };
  const torch::Tensor main = lightgcn(dense_adjacency(d));  // no repeated pairs: weighted = binary
  const torch::Tensor z1 = lightgcn(dense(sgl->view_graphs(0, 1)[0]));
  const torch::Tensor z2 = lightgcn(dense(sgl->view_graphs(0, 2)[0]));
  const int64_t nu = d.n_users;
  const torch::Tensor u = main.index_select(0, b.users);
  const torch::Tensor diff = (u * main.index_select(0, b.items + nu)).sum(1) -
                             (u * main.index_select(0, b.neg_items + nu)).sum(1);
  const torch::Tensor bpr = -torch::log(torch::sigmoid(diff)).sum();
  const torch::Tensor reg = emb({e0.index_select(0, b.users), e0.index_select(0, b.items + nu),
                                 e0.index_select(0, b.neg_items + nu)});
  const torch::Tensor ssl =
      info_nce(z1.index_select(0, b.users), z2.index_select(0, b.users), z2.slice(0, 0, nu), 0.5) +
      info_nce(z1.index_select(0, b.items + nu), z2.index_select(0, b.items + nu), z2.slice(0, nu),
               0.5);
  const double want = (bpr + 1e-5 * reg + 0.3 * ssl).item<double>();
  CHECK(got == Approx(want).epsilon(1e-4));
}

TEST_CASE("SGL: an unknown view type or a drop ratio of 1 is a ConfigError",
          "[models][graph][sgl]") {
  require_config_error("SGL", "type", "XX");
  require_config_error("SGL", "drop_ratio", "1");
  require_config_error("SGL", "ssl_tau", "0");
}

TEST_CASE("k-means finds separated clusters, repeats with its seed, any thread count",
          "[models][graph][kmeans]") {
  torch::manual_seed(3);
  // Four blobs around far-apart centres, 50 points each.
  const torch::Tensor centres =
      torch::tensor({0.0f, 0.0f, 10.0f, 0.0f, 0.0f, 10.0f, 10.0f, 10.0f}).view({4, 2});
  const torch::Tensor x =
      (centres.repeat_interleave(50, 0) + 0.1 * torch::randn({200, 2})).contiguous();
  layers::KMeansOptions o;
  o.k = 4;
  // Lloyd's iterations from a random sample can settle in a local optimum (two initial points
  // in one blob), as faiss's can: every seed must give a fixed point (each centroid the mean of
  // its points, each point at its nearest centroid), and some seed must recover the blobs.
  int recovered = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    o.seed = seed;
    const layers::KMeansResult r = layers::kmeans(x, o);
    REQUIRE(r.centroids.sizes() == torch::IntArrayRef({4, 2}));
    REQUIRE(r.assignment.sizes() == torch::IntArrayRef({200}));
    CHECK(torch::equal(r.assignment, torch::cdist(x, r.centroids).argmin(1)));
    for (int64_t k = 0; k < 4; ++k) {
      const torch::Tensor members = x.index({r.assignment == k});
      REQUIRE(members.size(0) > 0);
      CHECK(torch::allclose(r.centroids[k], members.mean(0), 1e-4, 1e-4));
    }
    std::set<int64_t> labels;
    bool blobs = true;
    for (int b = 0; b < 4; ++b) {
      const torch::Tensor part = r.assignment.slice(0, b * 50, (b + 1) * 50);
      blobs = blobs && part.eq(part[0]).all().item<bool>();
      labels.insert(part[0].item<int64_t>());
    }
    if (blobs && labels.size() == 4) ++recovered;
  }
  CHECK(recovered > 0);

  auto& pool = recbole::ThreadPool::instance();
  const int threads = pool.threads();
  pool.set_threads(threads == 1 ? 2 : 1);
  const torch::Tensor many = torch::randn({500, 8});
  o.k = 20;
  const layers::KMeansResult a = layers::kmeans(many, o);
  pool.set_threads(threads);
  const layers::KMeansResult b = layers::kmeans(many, o);
  CHECK(torch::equal(a.centroids, b.centroids));
  CHECK(torch::equal(a.assignment, b.assignment));

  // More clusters than points is an error (faiss aborts too); k = n puts each point alone.
  o.k = 501;
  CHECK_THROWS_AS(layers::kmeans(many, o), recbole::Error);
  o.k = 500;
  const layers::KMeansResult alone = layers::kmeans(many, o);
  CHECK(std::get<0>(at::_unique(alone.assignment)).numel() == 500);
}

TEST_CASE("NCL's loss: BPR + EmbLoss + structural InfoNCE, the prototype term after warm-up",
          "[models][graph][ncl]") {
  TinyData d;
  ModelHarness h(cpu_model_config("NCL", {{"num_clusters", "5"},
                                          {"n_layers", "2"},
                                          {"ssl_reg", "0.01"},
                                          {"proto_reg", "0.02"},
                                          {"alpha", "0.5"},
                                          {"warm_up_step", "1"}}),
                 d);
  auto m = h.create();
  auto* ncl = dynamic_cast<recbole::models::NCL*>(m.get());
  REQUIRE(ncl != nullptr);
  m->train();
  const auto b = pair_batch();
  const int64_t nu = d.n_users;

  const torch::Tensor a = dense_adjacency(d);
  const torch::Tensor e0 = torch::cat({param(*m, "user_embedding"), param(*m, "item_embedding")});
  const torch::Tensor e1 = torch::matmul(a, e0), e2 = torch::matmul(a, e1);
  const torch::Tensor fin = (e0 + e1 + e2) / 3.0;
  const torch::Tensor u = fin.index_select(0, b.users);
  const torch::Tensor diff = (u * fin.index_select(0, b.items + nu)).sum(1) -
                             (u * fin.index_select(0, b.neg_items + nu)).sum(1);
  const torch::Tensor ego_u = e0.index_select(0, b.users), ego_i = e0.index_select(0, b.items + nu);
  const torch::Tensor bpr = -torch::log(1e-10 + torch::sigmoid(diff)).mean() +
                            1e-4 * emb({ego_u, ego_i, e0.index_select(0, b.neg_items + nu)});
  const torch::Tensor ssl =
      0.01 * (info_nce(e2.index_select(0, b.users), ego_u, e0.slice(0, 0, nu), 0.1) +
              0.5 * info_nce(e2.index_select(0, b.items + nu), ego_i, e0.slice(0, nu), 0.1));

  m->on_epoch_start(0);  // E-step (0 % m_step == 0), still warming up
  REQUIRE(ncl->user_centroids().sizes() == torch::IntArrayRef({5, 64}));
  CHECK(m->calculate_loss(b).item<double>() == Approx((bpr + ssl).item<double>()).epsilon(1e-4));

  m->on_epoch_start(1);  // a new E-step on the same tables; the prototype term joins
  const torch::Tensor cu = ncl->user_centroids().to(torch::kFloat64);
  const torch::Tensor ci = ncl->item_centroids().to(torch::kFloat64);
  CHECK(torch::allclose(cu.norm(2, 1), torch::ones({5}, torch::kFloat64), 1e-5));
  // Each row's cluster is its nearest (unnormalised) centroid: check through the L2 argmin
  // against the centroids k-means would give, recomputed as cluster means.
  const torch::Tensor uc = ncl->user_cluster();
  REQUIRE(uc.sizes() == torch::IntArrayRef({nu}));
  for (int64_t k = 0; k < 5; ++k) {
    const torch::Tensor members = e0.slice(0, 0, nu).index({uc == k});
    if (members.size(0) == 0) continue;
    const torch::Tensor mean = members.mean(0);
    CHECK(torch::allclose(mean / mean.norm(), cu[k], 1e-3, 1e-4));
  }
  const torch::Tensor proto =
      0.02 *
      (info_nce(ego_u, cu.index_select(0, uc.index_select(0, b.users)), cu, 0.1) +
       info_nce(ego_i, ci.index_select(0, ncl->item_cluster().index_select(0, b.items)), ci, 0.1));
  CHECK(m->calculate_loss(b).item<double>() ==
        Approx((bpr + ssl + proto).item<double>()).epsilon(1e-4));
}

TEST_CASE(
    "NCL refuses more clusters than a table has rows, naming the key, bad keys are "
    "ConfigErrors",
    "[models][graph][ncl]") {
  TinyData d;  // 40 user ids, 30 item ids
  ModelHarness too_many(cpu_model_config("NCL", {{"num_clusters", "35"}}), d);
  REQUIRE_THROWS_WITH(too_many.create(), Catch::Contains("NCL key num_clusters") &&
                                             Catch::Contains("expected num_clusters <= 30"));
  ModelHarness h(cpu_model_config("NCL", {{"num_clusters", "30"}}), d);
  auto m = h.create();
  auto* ncl = dynamic_cast<recbole::models::NCL*>(m.get());
  CHECK(ncl->user_clusters() == 30);
  CHECK(ncl->item_clusters() == 30);
  m->on_epoch_start(0);
  CHECK(ncl->item_centroids().size(0) == 30);
  require_config_error("NCL", "num_clusters", "0");
  require_config_error("NCL", "ssl_temp", "0");
  require_config_error("NCL", "m_step", "0");
}

TEST_CASE("SpectralCF: 2I - D^-1 A and sigmoid filters, as the dense formula",
          "[models][graph][spectralcf]") {
  TinyData d;
  const int64_t n = d.n_users + d.n_items;
  const torch::Tensor a = dense_graph(d);
  const torch::Tensor op = 2 * torch::eye(n, torch::kFloat64) - a / (a.sum(1, true) + 1e-7);
  CHECK(torch::allclose(dense(recbole::models::random_walk_operator(d.train)), op, 1e-6, 1e-7));

  ModelHarness h(cpu_model_config("SpectralCF", {{"n_layers", "2"}}), d);
  auto m = h.create();
  auto* s = dynamic_cast<recbole::models::SpectralCF*>(m.get());
  REQUIRE(s != nullptr);
  auto [users, items] = s->propagate();
  REQUIRE(users.sizes() == torch::IntArrayRef({d.n_users, 3 * 64}));
  torch::Tensor e = torch::cat({param(*m, "user_embedding"), param(*m, "item_embedding")});
  std::vector<torch::Tensor> all{e};
  for (int k = 0; k < 2; ++k) {
    e = torch::sigmoid(
        torch::matmul(torch::matmul(op, e), param(*m, "filter_" + std::to_string(k))));
    all.push_back(e);
  }
  const torch::Tensor expected = torch::cat(all, 1);
  CHECK(torch::allclose(torch::cat({users, items}).to(torch::kFloat64), expected, 1e-4, 1e-5));
  // The filters are N(0.01, 0.02²), untouched by the xavier pass.
  const torch::Tensor f = param(*m, "filter_0");
  CHECK(std::abs(f.mean().item<double>() - 0.01) < 0.005);
  CHECK(std::abs(f.std().item<double>() - 0.02) < 0.003);

  const auto b = pair_batch();
  const torch::Tensor fu = expected.index_select(0, b.users);
  const torch::Tensor fp = expected.index_select(0, b.items + d.n_users);
  const torch::Tensor fn = expected.index_select(0, b.neg_items + d.n_users);
  const double want =
      (-torch::log(1e-10 + torch::sigmoid((fu * fp).sum(1) - (fu * fn).sum(1))).mean() +
       1e-3 * emb({fu, fp, fn}))
          .item<double>();
  CHECK(m->calculate_loss(b).item<double>() == Approx(want).epsilon(1e-4));
  require_config_error("SpectralCF", "n_layers", "0");
}

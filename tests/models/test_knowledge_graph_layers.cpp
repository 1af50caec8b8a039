// The graph inputs of KGIN and MCCLK (models/layers/knowledge.h) against their definitions on
// small inputs: interaction matrices, edge sampling, per-head scatter mean and softmax, the
// blocked top-k of cosine similarities and the kNN graph; KGIN's independence losses and
// MCCLK's contrastive term against hand computations; predict and full_sort_predict of both.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include <torch/torch.h>

#include "models/knowledge/kgin.h"
#include "models/knowledge/mcclk.h"
#include "models/layers/knowledge.h"
#include "tests/models/model_fixture.h"

namespace layers = recbole::models::layers;
using recbole::testing::dense;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

namespace {

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa) / std::sqrt(bb);
}

std::vector<std::vector<double>> rows_of(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kFloat64).contiguous();
  std::vector<std::vector<double>> out(size_t(d.size(0)));
  for (int64_t r = 0; r < d.size(0); ++r)
    for (int64_t c = 0; c < d.size(1); ++c) out[size_t(r)].push_back(d[r][c].item<double>());
  return out;
}

// Trains `m` on one pairwise batch of TinyData's training pairs.
void train_one_batch(recbole::models::Model& m, const ModelHarness& h) {
  m.train();
  recbole::data::Batch b;
  b.users = torch::tensor({3, 17, 5, 9}, torch::kInt64);
  b.items = torch::tensor({1, 2, 3, 4}, torch::kInt64);
  b.neg_items = torch::tensor({20, 21, 22, 23}, torch::kInt64);
  torch::optim::Adam opt(m.parameters(), torch::optim::AdamOptions(0.01));
  torch::Tensor loss = m.calculate_loss(h.device.place(b));
  REQUIRE(std::isfinite(loss.item<double>()));
  loss.backward();
  opt.step();
}

}  // namespace

TEST_CASE("KGIN/MCCLK interaction matrices: user means and the row-normalised graph",
          "[models][knowledge]") {
  const TinyData d;
  const int64_t e = d.kg.n_entities();
  const torch::Tensor m = dense(layers::user_item_mean_matrix(d.train, e), torch::kFloat32);
  const torch::Tensor g =
      dense(layers::row_normalized_interaction_graph(d.train, e), torch::kFloat32);
  REQUIRE(m.sizes() == torch::IntArrayRef({d.n_users, e}));
  const int64_t n = d.n_users + e;
  REQUIRE(g.sizes() == torch::IntArrayRef({n, n}));
  // The binary adjacency, built directly, row-normalised.
  torch::Tensor a = torch::zeros({n, n});
  for (int32_t u = 0; u < d.train.n_users(); ++u)
    for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it) {
      a[u][d.n_users + *it] = 1.0f;
      a[d.n_users + *it][u] = 1.0f;
    }
  const torch::Tensor deg = a.sum(1, true);
  const torch::Tensor expected = torch::where(deg > 0, a / deg.clamp_min(1), torch::zeros_like(a));
  CHECK(torch::allclose(g, expected, 0, 1e-7));
  // M is the user block of that graph: row u = 1/deg(u) at u's distinct items.
  CHECK(torch::allclose(m, expected.narrow(0, 0, d.n_users).narrow(1, d.n_users, e), 0, 1e-7));
  for (int32_t u = 1; u < d.n_users; ++u) {
    std::set<int32_t> items(d.train.row_begin(u), d.train.row_end(u));
    CHECK(m[u].sum().item<double>() == Approx(1.0).epsilon(1e-6));
    CHECK(static_cast<size_t>((m[u] > 0).sum().item<int64_t>()) == items.size());
  }
  CHECK(m[0].abs().sum().item<double>() == 0.0);  // the pad user has no items
}

TEST_CASE("KG edge sampling keeps floor(n · rate) distinct edges, a function of the seed",
          "[models][knowledge]") {
  for (const auto& [n, rate] : std::vector<std::pair<int64_t, double>>{{1001, 0.5}, {97, 0.3}}) {
    const torch::Tensor s = layers::sample_edges(n, rate, 42);
    REQUIRE(s.numel() == static_cast<int64_t>(std::floor(double(n) * rate)));
    const int64_t* p = s.data_ptr<int64_t>();
    for (int64_t k = 0; k < s.numel(); ++k) {
      CHECK(p[k] >= 0);
      CHECK(p[k] < n);
      if (k > 0) CHECK(p[k - 1] < p[k]);  // ascending, hence distinct
    }
    CHECK(torch::equal(s, layers::sample_edges(n, rate, 42)));
    CHECK_FALSE(torch::equal(s, layers::sample_edges(n, rate, 43)));
  }
  CHECK(torch::equal(layers::sample_edges(10, 0.0, 1), torch::arange(10)));
  // Uniform: every edge is kept about half of the time over many seeds.
  std::vector<int> kept(40, 0);
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const torch::Tensor s = layers::sample_edges(40, 0.5, seed);
    for (int64_t k = 0; k < s.numel(); ++k) ++kept[size_t(s[k].item<int64_t>())];
  }
  for (int c : kept) CHECK(std::abs(c - 1000) < 150);
}

TEST_CASE("scatter mean and segment softmax equal their per-head definitions",
          "[models][knowledge]") {
  torch::manual_seed(3);
  const torch::Tensor index = torch::tensor({2, 0, 2, 2, 4, 0, 4}, torch::kInt64);
  const torch::Tensor src = (torch::randn({7, 3}) * 10).requires_grad_(true);
  const torch::Tensor mean = layers::scatter_mean(src, index, 6);
  const torch::Tensor soft = layers::segment_softmax(src, index, 6);
  const torch::Tensor soft1 = layers::segment_softmax(src.select(1, 0), index, 6);
  REQUIRE(mean.sizes() == torch::IntArrayRef({6, 3}));
  for (int64_t h = 0; h < 6; ++h) {
    const torch::Tensor rows = (index == h).nonzero().view({-1});
    if (rows.numel() == 0) {
      CHECK(mean[h].abs().sum().item<double>() == 0.0);
      continue;
    }
    const torch::Tensor group = src.detach().index_select(0, rows);
    CHECK(torch::allclose(mean[h], group.mean(0), 1e-6, 1e-6));
    CHECK(
        torch::allclose(soft.detach().index_select(0, rows), torch::softmax(group, 0), 1e-6, 1e-7));
    CHECK(torch::allclose(soft1.detach().index_select(0, rows),
                          torch::softmax(group.select(1, 0), 0), 1e-6, 1e-7));
  }
  // Gradients reach the source rows.
  (mean.sum() + (soft * torch::arange(21, torch::kFloat32).view({7, 3})).sum()).backward();
  REQUIRE(src.grad().defined());
  CHECK(src.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("blocked cosine top-k equals the dense top-k, over several row blocks and tiles",
          "[models][knowledge]") {
  torch::manual_seed(5);
  // 2,500 rows: 10 row blocks and 2 column tiles of the blocked scan.
  const torch::Tensor x = torch::randn({2500, 8});
  const int64_t k = 7;
  const layers::TopK top = layers::cosine_topk(x, k);
  REQUIRE(top.values.sizes() == torch::IntArrayRef({2500, k}));
  namespace F = torch::nn::functional;
  const torch::Tensor xn = F::normalize(x, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor sims = xn.mm(xn.t());
  const auto [values, indices] = sims.topk(k, 1);
  CHECK(torch::allclose(top.values, values, 0, 1e-6));
  // The selected columns hold the selected values, and every row finds itself.
  CHECK(torch::allclose(sims.gather(1, top.indices), top.values, 0, 1e-6));
  CHECK(torch::equal(top.indices.select(1, 0), torch::arange(2500)));
  // Distinct columns per row.
  for (int64_t r = 0; r < 2500; r += 97) {
    std::set<int64_t> cols;
    for (int64_t j = 0; j < k; ++j) cols.insert(top.indices[r][j].item<int64_t>());
    CHECK(cols.size() == size_t(k));
  }
  CHECK_THROWS(layers::cosine_topk(x.narrow(0, 0, 5), 6));
}

TEST_CASE("the kNN graph is D^-1/2 S D^-1/2 of the rows' top-k cosine similarities",
          "[models][knowledge]") {
  torch::manual_seed(9);
  const torch::Tensor x = torch::randn({30, 4});
  const int64_t k = 5;
  namespace F = torch::nn::functional;
  const torch::Tensor xn = F::normalize(x, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor sims = xn.mm(xn.t());
  const auto [values, indices] = sims.topk(k, 1);
  const torch::Tensor s = torch::zeros({30, 30}).scatter(1, indices, values);
  const torch::Tensor dis = s.sum(1).pow(-0.5);
  const torch::Tensor expected = dis.view({-1, 1}) * s * dis.view({1, -1});
  CHECK(torch::allclose(dense(layers::knn_graph(x, k), torch::kFloat32), expected, 1e-5, 1e-6));
}

TEST_CASE("the kNN graph's first rows alone equal those rows of the whole graph",
          "[models][knowledge]") {
  torch::manual_seed(11);
  // 2,300 rows: the first 700 span three row blocks, their neighbours more.
  const torch::Tensor x = torch::randn({2300, 6});
  const int64_t k = 4, first = 700;
  const std::vector<int64_t> ids = {5, 2299, 0, 1024, 5};
  const torch::Tensor rows = torch::tensor(ids, torch::kInt64);
  const layers::TopK all = layers::cosine_topk(x, k);
  const layers::TopK some = layers::cosine_topk(x, k, ids);
  CHECK(torch::equal(some.indices, all.indices.index_select(0, rows)));
  CHECK(torch::allclose(some.values, all.values.index_select(0, rows), 0, 1e-6));

  const torch::Tensor whole = dense(layers::knn_graph(x, k), torch::kFloat32);
  const torch::Tensor part = dense(layers::knn_graph(x, k, first), torch::kFloat32);
  CHECK(torch::allclose(part.narrow(0, 0, first), whole.narrow(0, 0, first), 1e-6, 1e-7));
  CHECK(part.narrow(0, first, 2300 - first).abs().sum().item<float>() == 0.0f);
  // The first rows reach columns past `first`, whose degrees come from their own rows.
  CHECK(part.narrow(0, 0, first).narrow(1, first, 2300 - first).abs().sum().item<float>() > 0);
  CHECK(torch::allclose(dense(layers::knn_graph(x, k, 2300), torch::kFloat32), whole, 0, 0));
  CHECK_THROWS(layers::knn_graph(x, k, 2301));
  CHECK_THROWS(layers::cosine_topk(x, k, std::vector<int64_t>{2300}));
}

TEST_CASE("KGIN's independence losses equal a hand computation", "[models][knowledge]") {
  torch::manual_seed(1);
  const torch::Tensor att = torch::randn({3, 5});
  const auto a = rows_of(att);
  double cos2 = 0, dcor = 0, mi = 0;
  const double tau = 0.2;
  // Distance correlation of two samples, step by step.
  const auto centred = [](const std::vector<double>& v) {
    const size_t n = v.size();
    std::vector<std::vector<double>> d(n, std::vector<double>(n));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        d[i][j] = std::sqrt(std::max(v[i] * v[i] - 2 * v[i] * v[j] + v[j] * v[j], 0.0) + 1e-8);
    std::vector<double> row(n, 0), col(n, 0);
    double all = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) row[i] += d[i][j] / n, col[j] += d[i][j] / n, all += d[i][j];
    all /= double(n * n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) d[i][j] = d[i][j] - col[j] - row[i] + all;
    return d;
  };
  const auto dcov = [](const std::vector<std::vector<double>>& p,
                       const std::vector<std::vector<double>>& q) {
    double s = 0;
    for (size_t i = 0; i < p.size(); ++i)
      for (size_t j = 0; j < p.size(); ++j) s += p[i][j] * q[i][j];
    return std::sqrt(std::max(s / double(p.size() * p.size()), 0.0) + 1e-8);
  };
  for (size_t f = 0; f < 3; ++f) {
    double den = 0;
    for (size_t g = 0; g < 3; ++g) den += std::exp(cosine(a[f], a[g]) / tau);
    mi -= std::log(std::exp(cosine(a[f], a[f]) / tau) / den);
    for (size_t g = f + 1; g < 3; ++g) {
      cos2 += std::pow(cosine(a[f], a[g]), 2);
      const auto p = centred(a[f]), q = centred(a[g]);
      dcor += dcov(p, q) / std::sqrt(dcov(p, p) * dcov(q, q) + 1e-8);
    }
  }
  using recbole::models::kgin_independence;
  CHECK(kgin_independence(att, "cosine", tau).item<double>() == Approx(cos2).epsilon(1e-5));
  CHECK(kgin_independence(att, "distance", tau).item<double>() == Approx(dcor).epsilon(1e-5));
  CHECK(kgin_independence(att, "mi", tau).item<double>() == Approx(mi).epsilon(1e-5));
}

TEST_CASE("MCCLK's contrastive term equals its formula", "[models][knowledge]") {
  torch::manual_seed(2);
  const torch::Tensor a = torch::randn({4, 3}), b = torch::randn({4, 3});
  const auto ra = rows_of(a), rb = rows_of(b);
  const double tau = 0.8;
  double expected = 0;
  for (size_t i = 0; i < 4; ++i) {
    double den = -std::exp(cosine(ra[i], ra[i]) / tau);
    for (size_t j = 0; j < 4; ++j)
      den += std::exp(cosine(ra[i], ra[j]) / tau) + std::exp(cosine(ra[i], rb[j]) / tau);
    expected -= std::log(std::exp(cosine(ra[i], rb[i]) / tau) / den) / 4;
  }
  CHECK(recbole::models::mcclk_nce(a, b, tau).item<double>() == Approx(expected).epsilon(1e-5));

  // Its chunked backward equals autograd through the dense formula (2,100 rows: three chunks).
  const torch::Tensor x = torch::randn({2100, 5}).requires_grad_(true);
  const torch::Tensor y = torch::randn({2100, 5}).requires_grad_(true);
  const torch::Tensor weight = torch::rand({});
  (weight * recbole::models::mcclk_nce(x, y, tau)).backward();
  const torch::Tensor gx = x.grad().clone(), gy = y.grad().clone();
  x.grad().zero_();
  y.grad().zero_();
  namespace F = torch::nn::functional;
  const torch::Tensor xn = F::normalize(x, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor yn = F::normalize(y, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor refl = (xn.mm(xn.t()) / tau).exp();
  const torch::Tensor between = (xn.mm(yn.t()) / tau).exp();
  const torch::Tensor dense_loss =
      -(between.diagonal() / (refl.sum(1) + between.sum(1) - refl.diagonal())).log().mean();
  CHECK(recbole::models::mcclk_nce(x, y, tau).item<double>() ==
        Approx(dense_loss.item<double>()).epsilon(1e-5));
  (weight * dense_loss).backward();
  CHECK(torch::allclose(gx, x.grad(), 1e-4, 1e-7));
  CHECK(torch::allclose(gy, y.grad(), 1e-4, 1e-7));
}

TEST_CASE("KGIN and MCCLK: one edge sample per evaluation, predict == full_sort_predict",
          "[models][knowledge]") {
  const TinyData d;
  for (const char* name : {"KGIN", "MCCLK"}) {
    for (const char* loss : {"BPR", "BCE"}) {
      if (std::string(name) == "KGIN" && std::string(loss) == "BCE") continue;
      DYNAMIC_SECTION(name << " " << loss) {
        std::vector<std::pair<std::string, std::string>> over;
        if (std::string(name) == "MCCLK") over = {{"loss_type", loss}};
        ModelHarness h(recbole::testing::model_config(name, over), d);
        h.device.seed(7);
        auto m = h.create();
        train_one_batch(*m, h);
        m->eval();
        torch::NoGradGuard no_grad;
        m->before_evaluation();
        const torch::Tensor full =
            m->full_sort_predict(recbole::testing::user_batch(h.device, {3, 17})).to(torch::kCPU);
        std::vector<int64_t> users, items;
        for (int64_t u : {3, 17})
          for (int64_t i = 0; i < d.n_items; ++i) users.push_back(u), items.push_back(i);
        const torch::Tensor pairs =
            m->predict(recbole::testing::user_batch(h.device, users, items)).to(torch::kCPU);
        CHECK(torch::allclose(pairs.view({2, -1}), full, 1e-5, 1e-6));
        // A second evaluation of the same weights samples the same edges: the same scores.
        m->before_evaluation();
        CHECK(torch::equal(
            m->full_sort_predict(recbole::testing::user_batch(h.device, {3, 17})).to(torch::kCPU),
            full));
        if (std::string(loss) == "BCE") CHECK(((full >= 0) & (full <= 1)).all().item<bool>());
      }
    }
  }
}

TEST_CASE("KGIN: each training forward samples new edges, and the evaluation's follow the weights",
          "[models][knowledge]") {
  const TinyData d;
  ModelHarness h(recbole::testing::model_config("KGIN", {}), d);
  h.device.seed(7);
  auto m = std::dynamic_pointer_cast<recbole::models::KGIN>(h.create());
  REQUIRE(m);
  torch::NoGradGuard no_grad;
  m->eval();
  // Same weights, different samples: different propagated rows (half the edges dropped).
  const auto a = m->propagate(1), b = m->propagate(2), c = m->propagate(1);
  CHECK(torch::equal(a.second, c.second));
  CHECK_FALSE(torch::equal(a.second, b.second));
  const uint64_t before = m->evaluation_seed();
  m->train();
  {
    torch::AutoGradMode grad(true);
    train_one_batch(*m, h);
  }
  CHECK(m->evaluation_seed() != before);
}

// The CPU ranking kernels (cpu_topk.h) and the evaluator's two CPU paths against a plain
// full sort: same items, same order, ties by lower item id.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "kernels/cpu_topk.h"
#include "models/capabilities.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/utils/thread_pool.h"
#include "trainer/evaluator.h"

using recbole::kernels::RowTopK;

namespace {

// Reference: indices of the k largest finite values, descending, ties by lower index.
std::vector<int32_t> reference_topk(const std::vector<float>& v, int k) {
  std::vector<int32_t> idx;
  for (int32_t i = 0; i < static_cast<int32_t>(v.size()); ++i)
    if (std::isfinite(v[i]) || v[i] == std::numeric_limits<float>::infinity()) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return v[a] > v[b]; });
  if (static_cast<int>(idx.size()) > k) idx.resize(static_cast<size_t>(k));
  return idx;
}

}  // namespace

TEST_CASE("RowTopK equals a full sort, with ties, masked entries, NaN and tiles", "[eval][topk]") {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = std::uniform_int_distribution<int64_t>(0, 700)(gen);
    const int k = std::uniform_int_distribution<int>(1, 60)(gen);
    // Few distinct values, so ties are common; some entries masked or NaN.
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
      const int r = std::uniform_int_distribution<int>(0, 19)(gen);
      x = r == 0   ? -std::numeric_limits<float>::infinity()
          : r == 1 ? std::numeric_limits<float>::quiet_NaN()
                   : static_cast<float>(std::uniform_int_distribution<int>(-5, 5)(gen));
    }
    std::vector<float> vals(static_cast<size_t>(k));
    std::vector<int32_t> idx(static_cast<size_t>(k));
    RowTopK topk(k, vals.data(), idx.data());
    // Offered in tiles of random widths, as the factor path does.
    for (int64_t lo = 0; lo < n;) {
      const int64_t w =
          std::min<int64_t>(n - lo, std::uniform_int_distribution<int64_t>(1, 200)(gen));
      topk.push(v.data() + lo, w, static_cast<int32_t>(lo));
      lo += w;
    }
    const std::vector<int32_t> want = reference_topk(v, k);
    REQUIRE(topk.size() == static_cast<int>(want.size()));
    REQUIRE(std::vector<int32_t>(idx.begin(), idx.begin() + topk.size()) == want);
  }
}

TEST_CASE("mask_items masks history inside the tile and keeps the split's positives",
          "[eval][topk]") {
  std::vector<float> row(10, 1.f);
  const std::vector<int32_t> hist = {2, 5, 12, 14, 19}, keep = {5};
  const int32_t* next =
      recbole::kernels::mask_items(row.data(), 10, 20, hist.data(), hist.data() + hist.size(),
                                   keep.data(), keep.data() + keep.size());
  REQUIRE(next == hist.data() + hist.size());
  for (int i = 0; i < 10; ++i) CHECK(std::isinf(row[i]) == (i == 2 || i == 4 || i == 9));
}

namespace {

// Scores ⟨U[u], I[i]⟩ with small integer factors: exact in float whatever the GEMM blocking,
// and full of ties. Exposes the factors unless told not to.
class FactorModel : public recbole::models::Model, public recbole::models::FactorScores {
 public:
  FactorModel(const recbole::models::ModelContext& ctx, torch::Tensor u, torch::Tensor i,
              bool expose)
      : Model("FactorModel", ctx), u_(u), i_(i), expose_(expose) {}
  torch::Tensor full_sort_predict(const recbole::data::Batch& batch) override {
    return torch::mm(u_.index_select(0, batch.users), i_.t());
  }
  bool score_factors(torch::Tensor* users, torch::Tensor* items) const override {
    if (!expose_) return false;
    *users = u_;
    *items = i_;
    return true;
  }

 private:
  torch::Tensor u_, i_;
  bool expose_;
};

}  // namespace

TEST_CASE("the factor path and the score-block path rank exactly like a full sort",
          "[eval][topk]") {
  recbole::config::ConfigSources src;
  src.model = "BPR";
  src.dataset = "tiny";
  const recbole::config::Config config = recbole::config::Config::build(src);
  recbole::DeviceSettings ds;
  ds.device = "cpu";
  ds.num_threads = 2;
  recbole::DeviceManager dm(ds);
  recbole::Dist dist;
  // More items than one tile (2048) and more users than one user block (128).
  const int64_t n_users = 300, n_items = 4500, d = 4;
  std::mt19937 gen(11);
  std::vector<int32_t> hu, hi, pu, pi;
  for (int32_t u = 1; u < n_users; ++u) {
    for (int j = 0; j < 40; ++j) {
      hu.push_back(u);
      hi.push_back(std::uniform_int_distribution<int32_t>(1, n_items - 1)(gen));
    }
    for (int j = 0; j < 3; ++j) {
      pu.push_back(u);
      pi.push_back(std::uniform_int_distribution<int32_t>(1, n_items - 1)(gen));
    }
  }
  const recbole::data::InteractionMatrix history(n_users, n_items, hu, hi);
  const recbole::data::InteractionMatrix positives(n_users, n_items, pu, pi);
  torch::manual_seed(3);
  torch::Tensor U = torch::randint(-3, 4, {n_users, d}).to(torch::kFloat32);
  torch::Tensor I = torch::randint(-3, 4, {n_items, d}).to(torch::kFloat32);
  recbole::models::ModelContext ctx{config, n_users, n_items, history, dm};
  FactorModel with_factors(ctx, U, I, true), without(ctx, U, I, false);

  recbole::evaluator::EvaluatorSettings s;
  s.metrics = {"Recall", "NDCG"};
  s.topk = {5, 20};
  s.memory_budget_bytes = 64 * n_items * 4;  // several score blocks
  recbole::evaluator::Evaluator ev(s, dm, dist, n_items, std::vector<int64_t>(n_items, 1));
  const recbole::tasks::UserRankingSource queries(positives, &history);
  const auto a = ev.collect(with_factors, queries);
  const auto b = ev.collect(without, queries);
  REQUIRE(a.topk_items == b.topk_items);
  REQUIRE(a.hits == b.hits);
  REQUIRE(a.pos_len == b.pos_len);

  // Reference for every evaluated user.
  const torch::Tensor scores = torch::mm(U, I.t());
  int64_t row = 0;
  for (int32_t u : positives.nonempty_users()) {
    std::vector<float> v(scores[u].data_ptr<float>(), scores[u].data_ptr<float>() + n_items);
    v[0] = -std::numeric_limits<float>::infinity();
    for (const int32_t* it = history.row_begin(u); it != history.row_end(u); ++it)
      if (!positives.contains(u, *it)) v[*it] = -std::numeric_limits<float>::infinity();
    const std::vector<int32_t> want = reference_topk(v, 20);
    const std::vector<int32_t> got(a.topk_items.begin() + row * 20,
                                   a.topk_items.begin() + row * 20 + 20);
    REQUIRE(got == want);
    ++row;
  }
  REQUIRE(row == a.n_users());
}

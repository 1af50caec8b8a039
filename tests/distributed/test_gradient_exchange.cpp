// The row-sparse gradient exchange against the dense one, on two in-process ranks (two Dist
// objects in two threads, Gloo over 127.0.0.1).
#include <catch2/catch.hpp>

#include <functional>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "dist_test_util.h"
#include "recbole/runtime/dist.h"
#include "trainer/gradient_exchange.h"

namespace {

// Runs body(rank, dist) on `world` ranks, one thread each.
void on_ranks(int world, const std::function<void(int, recbole::Dist&)>& body) {
  const int port = recbole::testing::free_port();
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(world);
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        recbole::DistSettings s;
        s.rank = r;
        s.local_rank = r;
        s.world_size = world;
        s.local_world_size = world;
        s.master_addr = "127.0.0.1";
        s.master_port = port;
        s.timeout_s = 30;
        s.backend = "gloo";
        s.launcher = "test";
        recbole::Dist dist(s);
        body(r, dist);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Rank r's parameters: two tables and a bias, with gradients set on a few rows (r-dependent,
// overlapping between ranks) and the bias's gradient everywhere.
std::vector<torch::Tensor> params_of(int rank, int64_t touched) {
  torch::manual_seed(100 + rank);
  std::vector<torch::Tensor> params = {torch::randn({500, 16}), torch::randn({300, 16}),
                                       torch::randn({7})};
  for (auto& p : params) {
    p.set_requires_grad(true);
    torch::Tensor g = torch::zeros_like(p);
    if (p.dim() == 2) {
      torch::Tensor rows = torch::randint(0, p.size(0), {touched}, torch::kInt64);
      g.index_put_({rows}, torch::randn({touched, p.size(1)}));
    } else {
      g.copy_(torch::randn_like(p));
    }
    p.mutable_grad() = g;
  }
  return params;
}

}  // namespace

TEST_CASE("the row-sparse gradient exchange gives the dense exchange's gradients bit for bit",
          "[dist][gradient_exchange]") {
  using recbole::trainer::GradientExchange;
  for (int64_t touched : {int64_t{0}, int64_t{5}, int64_t{40}, int64_t{250}}) {
    // Made before the threads start: torch's generator is shared by the threads.
    std::vector<std::vector<torch::Tensor>> dense, sparse;
    for (int r = 0; r < 2; ++r) {
      dense.push_back(params_of(r, touched));
      sparse.push_back(params_of(r, touched));
    }
    on_ranks(2, [&](int r, recbole::Dist& dist) {
      recbole::trainer::average_gradients(dense[r], dist, GradientExchange::kDense);
      recbole::trainer::average_gradients(sparse[r], dist, GradientExchange::kSparse);
    });
    for (int r = 0; r < 2; ++r)
      for (size_t k = 0; k < dense[r].size(); ++k) {
        INFO("touched " << touched << ", rank " << r << ", parameter " << k);
        REQUIRE(torch::equal(dense[r][k].grad(), sparse[r][k].grad()));
        REQUIRE(torch::equal(dense[r][k].grad(), dense[0][k].grad()));  // every rank alike
      }
    // The mean, not the sum: rank 0's and rank 1's own gradients average to it.
    const auto own0 = params_of(0, touched), own1 = params_of(1, touched);
    REQUIRE(torch::allclose(dense[0][0].grad(), (own0[0].grad() + own1[0].grad()) / 2));
  }
}

TEST_CASE("auto picks the row-sparse exchange when batches touch few rows and counts bytes",
          "[dist][gradient_exchange]") {
  using recbole::trainer::gradient_exchange_stats;
  const auto before = gradient_exchange_stats();
  std::vector<std::vector<int64_t>> bytes(2);
  std::vector<std::vector<std::vector<torch::Tensor>>> steps(2);
  for (int r = 0; r < 2; ++r)
    for (int64_t touched : {5, 5, 2000, 2000})  // 2000 random rows: nearly every row
      steps[r].push_back(params_of(r, touched));
  on_ranks(2, [&](int r, recbole::Dist& dist) {
    for (auto& params : steps[r]) {
      const int64_t b0 = dist.traffic().bytes;
      recbole::trainer::average_gradients(params, dist);
      bytes[r].push_back(dist.traffic().bytes - b0);
    }
  });
  const auto after = gradient_exchange_stats();
  // Both threads count into the same process-wide totals. Step 1 is dense (nothing known
  // yet; its all-reduce carries the counts), step 2 sparse, step 3 gathers the counts and
  // goes dense, step 4 dense at once.
  REQUIRE(after.steps - before.steps == 8);
  REQUIRE(after.sparse_steps - before.sparse_steps == 2);
  const int64_t dense_bytes = (500 * 16 + 300 * 16 + 7) * 4;
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << bytes[r][0] << " " << bytes[r][1] << " " << bytes[r][2] << " "
                 << bytes[r][3]);
    REQUIRE(bytes[r][0] == dense_bytes + 2 * 2 * 4);  // + both ranks' two counts as floats
    REQUIRE(bytes[r][1] < dense_bytes / 10);
    REQUIRE(bytes[r][1] > 0);
    REQUIRE(bytes[r][2] == 2 * 8 + bytes[r][0]);  // the counts gathered, then dense
    REQUIRE(bytes[r][3] == bytes[r][0]);
  }
}

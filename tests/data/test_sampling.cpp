// InteractionMatrix, NegativeSampler and TrainBatcher: the training-data side of the trainer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "recbole/data/interaction_matrix.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

using recbole::data::InteractionMatrix;
using recbole::data::NegativeSampler;
using recbole::data::PairBatch;
using recbole::data::Rng;
using recbole::data::TrainBatcher;

TEST_CASE("InteractionMatrix sorts rows, drops duplicates and merges", "[data]") {
  InteractionMatrix m(4, 6, {2, 1, 2, 2, 3}, {5, 3, 1, 5, 2});
  REQUIRE(m.nnz() == 4);
  REQUIRE(m.row_size(0) == 0);
  REQUIRE(std::vector<int32_t>(m.row_begin(2), m.row_end(2)) == std::vector<int32_t>{1, 5});
  REQUIRE(m.contains(1, 3));
  REQUIRE_FALSE(m.contains(1, 4));
  REQUIRE(m.nonempty_users() == std::vector<int32_t>{1, 2, 3});
  InteractionMatrix other(4, 6, {1, 0}, {4, 2});
  InteractionMatrix u = InteractionMatrix::merge(m, other);
  REQUIRE(std::vector<int32_t>(u.row_begin(1), u.row_end(1)) == std::vector<int32_t>{3, 4});
  REQUIRE(u.row_size(0) == 1);
  REQUIRE(u.item_degrees() == std::vector<int64_t>{0, 1, 2, 1, 1, 1});
}

TEST_CASE("uniform negatives never hit the user's items or the padding id", "[data]") {
  InteractionMatrix m(3, 6, {1, 1, 1, 2}, {1, 2, 3, 5});
  NegativeSampler s(m, "uniform", 1.0, {});
  Rng rng(7);
  std::set<int32_t> seen;
  for (int i = 0; i < 2000; ++i) {
    int32_t n = s.sample(1, rng);
    REQUIRE(n >= 4);
    REQUIRE(n <= 5);
    seen.insert(n);
    REQUIRE(s.sample(2, rng) != 5);
  }
  REQUIRE(seen == std::set<int32_t>{4, 5});
}

TEST_CASE("popularity negatives follow count^alpha and skip zero counts", "[data]") {
  InteractionMatrix m(2, 5, {1}, {1});
  // Item 2 three times as popular as item 3; item 4 never seen.
  NegativeSampler s(m, "popularity", 1.0, {0, 5, 3, 1, 0});
  Rng rng(11);
  std::map<int32_t, int> count;
  for (int i = 0; i < 40000; ++i) ++count[s.sample(1, rng)];
  REQUIRE(count[1] == 0);  // the user's own item
  REQUIRE(count[4] == 0);  // zero popularity
  REQUIRE(double(count[2]) / count[3] == Approx(3.0).epsilon(0.06));
}

TEST_CASE("a user holding every item makes sampling an error, not a hang", "[data]") {
  InteractionMatrix m(2, 4, {1, 1, 1}, {1, 2, 3});
  REQUIRE_THROWS_AS(NegativeSampler(m, "uniform", 1.0, {}), recbole::DataError);
}

TEST_CASE("TrainBatcher covers every row once per epoch, reproducibly", "[data]") {
  std::vector<int32_t> users, items;
  for (int i = 0; i < 103; ++i) users.push_back(1 + i % 7), items.push_back(1 + i % 11);
  InteractionMatrix m(8, 30, users, items);
  NegativeSampler s(m, "uniform", 1.0, {});
  auto epoch_rows = [&](uint64_t seed, int rank, int world, int64_t epoch) {
    TrainBatcher b(users, items, &s, 1, 10, true, seed, rank, world);
    b.start_epoch(epoch);
    std::vector<std::pair<int64_t, int64_t>> rows;
    PairBatch pb;
    while (b.next(pb)) {
      REQUIRE(pb.neg_items.size() == pb.users.size());
      for (int64_t k = 0; k < pb.size(); ++k) {
        REQUIRE_FALSE(
            m.contains(static_cast<int32_t>(pb.users[k]), static_cast<int32_t>(pb.neg_items[k])));
        rows.emplace_back(pb.users[k], pb.pos_items[k]);
      }
    }
    return rows;
  };
  auto a = epoch_rows(42, 0, 1, 0);
  REQUIRE(a.size() == 103);
  REQUIRE(a == epoch_rows(42, 0, 1, 0));  // same seed, same order
  REQUIRE(a != epoch_rows(42, 0, 1, 1));  // a new epoch reshuffles
  // Two ranks split every batch between them and together see each row exactly once.
  auto r0 = epoch_rows(42, 0, 2, 0), r1 = epoch_rows(42, 1, 2, 0);
  REQUIRE(r0.size() + r1.size() == 103);
  auto all = r0;
  all.insert(all.end(), r1.begin(), r1.end());
  std::sort(all.begin(), all.end());
  auto expect = a;
  std::sort(expect.begin(), expect.end());
  REQUIRE(all == expect);
}

TEST_CASE("TrainBatcher batch size follows RecBole's step rule", "[data]") {
  std::vector<int32_t> users(50, 1), items(50, 1);
  for (int i = 0; i < 50; ++i) items[i] = 1 + i;
  InteractionMatrix m(3, 200, users, items);
  NegativeSampler s(m, "uniform", 1.0, {});
  TrainBatcher b(users, items, &s, /*sample_num=*/3, /*batch=*/20, false, 1);
  REQUIRE(b.step() == 6);  // 20 // 3 positive rows, each repeated 3 times
  b.start_epoch(0);
  PairBatch pb;
  REQUIRE(b.next(pb));
  REQUIRE(pb.size() == 18);
  // Block layout: the 6 positives, then the same 6 again, then again.
  REQUIRE(std::vector<int64_t>(pb.pos_items.begin(), pb.pos_items.begin() + 6) ==
          std::vector<int64_t>(pb.pos_items.begin() + 6, pb.pos_items.begin() + 12));
  REQUIRE(b.batches_per_epoch() == 9);
}

TEST_CASE("the per-row filter path draws exactly the negatives the bitmap path draws", "[data]") {
  // Rows of every length: empty, one item, a heavy user holding all but two items, and
  // ordinary ones; the filter's false positives must fall back to the row's binary search.
  const int32_t n_items = 300;
  std::vector<int32_t> users, items;
  for (int32_t i = 1; i < n_items - 2; ++i) users.push_back(1), items.push_back(i);
  users.push_back(2), items.push_back(17);
  for (int32_t u = 3; u < 40; ++u)
    for (int32_t k = 0; k < u; ++k)
      users.push_back(u), items.push_back(1 + (u * 37 + k * 11) % (n_items - 1));
  InteractionMatrix m(41, n_items, users, items);
  for (const char* distribution : {"uniform", "popularity"}) {
    std::vector<int64_t> counts(n_items, 1);
    counts[0] = 0;
    NegativeSampler with_bitmap(m, distribution, 1.0, counts);
    NegativeSampler with_filter(m, distribution, 1.0, counts, /*bitmap_limit_bytes=*/0);
    for (int32_t u = 0; u < 41; ++u) {
      Rng a(1000 + u), b(1000 + u);
      with_filter.prefetch_bounds(u);
      with_filter.prefetch_filter(u);
      for (int i = 0; i < 200; ++i) {
        const int32_t x = with_bitmap.sample(u, a), y = with_filter.sample(u, b);
        REQUIRE(x == y);
        REQUIRE_FALSE(m.contains(u, y));
        REQUIRE(y > 0);
      }
    }
  }
}

TEST_CASE("TrainBatcher: positives then chunks of negatives in any order equal next()", "[data]") {
  std::vector<int32_t> users, items;
  for (int i = 0; i < 3000; ++i) users.push_back(1 + i % 13), items.push_back(1 + (i * 7) % 97);
  InteractionMatrix m(14, 120, users, items);
  NegativeSampler s(m, "uniform", 1.0, {});
  TrainBatcher one(users, items, &s, 1, 1300, true, 5), two(users, items, &s, 1, 1300, true, 5);
  PairBatch x, y;
  REQUIRE_FALSE(one.next(x));  // no epoch started yet
  one.start_epoch(3);
  two.start_epoch(3);
  int batches = 0;
  while (one.next(x)) {
    REQUIRE(two.next_positives(y));
    const int64_t chunks = two.negative_chunks(y);
    REQUIRE(chunks == (y.size() + 511) / 512);  // 1300, 1300, 400 rows in chunks of 512
    for (int64_t c = chunks - 1; c >= 0; --c) two.sample_negatives(y, c);
    REQUIRE(x.users == y.users);
    REQUIRE(x.pos_items == y.pos_items);
    REQUIRE(x.neg_items == y.neg_items);
    ++batches;
  }
  REQUIRE_FALSE(two.next_positives(y));
  REQUIRE(batches == 3);
}

TEST_CASE("the epoch shuffle is a well-mixed permutation, the same for any thread count",
          "[data]") {
  // 100k rows: several buckets of the parallel shuffle (one bucket per ~16k rows).
  const int n = 100000;
  std::vector<int32_t> users(n), items(n);
  for (int i = 0; i < n; ++i) users[i] = i, items[i] = 1 + i % 50;
  auto order = [&](int threads, int64_t epoch) {
    const int before = recbole::ThreadPool::instance().threads();
    recbole::ThreadPool::instance().set_threads(threads);
    TrainBatcher b(users, items, nullptr, 1, 4096, true, 9);
    b.start_epoch(epoch);
    std::vector<int64_t> rows;
    PairBatch pb;
    while (b.next(pb)) rows.insert(rows.end(), pb.users.begin(), pb.users.end());
    recbole::ThreadPool::instance().set_threads(before);
    return rows;
  };
  const std::vector<int64_t> a = order(1, 0);
  REQUIRE(a == order(3, 0));
  // The same order as the releases before: a seed's epoch order is part of a run's
  // reproducibility (this hash was computed when the shuffle ran as one part at this size; it
  // now runs as two).
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the row ids
  for (int64_t r : a) hash = (hash ^ static_cast<uint64_t>(r)) * 1099511628211ULL;
  CHECK(hash == 5886899775414479993ULL);
  REQUIRE(a != order(1, 1));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
  // Mixed: each tenth of the shuffled order holds rows from everywhere (mean index near n/2,
  // ~1% standard error), and position and original index are uncorrelated.
  double cov = 0;
  for (int t = 0; t < 10; ++t) {
    double mean = 0;
    for (int i = t * n / 10; i < (t + 1) * n / 10; ++i) mean += static_cast<double>(a[i]);
    mean /= n / 10;
    REQUIRE(mean == Approx(n / 2.0).epsilon(0.03));
  }
  for (int i = 0; i < n; ++i) cov += (i - n / 2.0) * (static_cast<double>(a[i]) - n / 2.0);
  const double corr = cov / (n * (static_cast<double>(n) * n / 12.0));
  REQUIRE(std::abs(corr) < 0.02);
}

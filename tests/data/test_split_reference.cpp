// split_dataset against a plain reference written here: on random tables with many users of
// skewed sizes (singletons, pairs, heavy users), for RO and TO, RS by user and over the whole
// table, and every LS mode, the three parts must be identical, row for row. The larger tables
// take the parallel, bucketed path of split.cpp; the small one the single-threaded path.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <sstream>

#include "data_test_util.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/utils/thread_pool.h"

using namespace recbole::data;
using recbole::data::testing::TempDir;

namespace {

// A table of n_rows interactions over n_users users: most users drawn with a skew (a few heavy
// users, many light ones), then some users with exactly one and two rows; timestamps with ties.
std::string random_inter(int64_t n_rows, int n_users, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::ostringstream out;
  out << "user_id:token\titem_id:token\ttimestamp:float\n";
  auto row = [&](int user) {
    out << 'u' << user << "\ti" << static_cast<int>(500 * unit(gen) * unit(gen)) << '\t'
        << static_cast<int>(1000 * unit(gen)) << '\n';
  };
  const int light = n_users / 10;  // users n_users - light ... get one or two rows
  for (int64_t r = 0; r < n_rows; ++r) {
    const double x = unit(gen);
    row(static_cast<int>((n_users - light) * x * x));
  }
  for (int u = n_users - light; u < n_users; ++u) {
    row(u);
    if (u % 2 == 0) row(u);
  }
  return out.str();
}

// The split as RecBole describes it, with no concern for speed.
SplitDataset reference_split(const Dataset& ds, const DatasetOptions& o) {
  const EvalArgs& ea = o.eval_args;
  const std::vector<int64_t> rows = order_rows(ds, ea, o.seed);
  const std::vector<int32_t>& users = ds.inter_users();
  const std::vector<int32_t>& items = ds.inter_items();
  SplitDataset out;
  Split* parts[3] = {&out.train, &out.valid, &out.test};
  auto add = [&](size_t k, int64_t row) {
    parts[k]->rows.push_back(row);
    parts[k]->users.push_back(users[static_cast<size_t>(row)]);
    parts[k]->items.push_back(items[static_cast<size_t>(row)]);
  };
  if (ea.split == EvalArgs::SplitKind::kRatio && ea.group_by == "none") {
    const std::vector<int64_t> sizes =
        split_sizes_by_ratio(static_cast<int64_t>(rows.size()), ea.ratios);
    size_t p = 0;
    for (size_t k = 0; k < 3; ++k) {
      for (int64_t i = 0; i < sizes[k]; ++i) add(k, rows[p++]);
    }
    return out;
  }
  std::map<int32_t, size_t> group_of;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t row : rows) {
    const int32_t u = users[static_cast<size_t>(row)];
    const auto [it, is_new] = group_of.emplace(u, groups.size());
    if (is_new) groups.emplace_back();
    groups[it->second].push_back(row);
  }
  for (const std::vector<int64_t>& g : groups) {
    const int64_t total = static_cast<int64_t>(g.size());
    std::vector<int64_t> sizes(3, 0);
    if (ea.split == EvalArgs::SplitKind::kRatio) {
      sizes = split_sizes_by_ratio(total, ea.ratios);
    } else if (ea.leave_one_mode == "valid_and_test") {
      // The last row tests and the one before validates, as long as one row is left to train.
      sizes = total >= 3   ? std::vector<int64_t>{total - 2, 1, 1}
              : total == 2 ? std::vector<int64_t>{1, 0, 1}
                           : std::vector<int64_t>{1, 0, 0};
    } else {
      const size_t held_out = ea.leave_one_mode == "valid_only" ? 1 : 2;
      sizes[0] = total >= 2 ? total - 1 : total;
      sizes[held_out] = total - sizes[0];
    }
    size_t p = 0;
    for (size_t k = 0; k < 3; ++k) {
      for (int64_t i = 0; i < sizes[k]; ++i) add(k, g[p++]);
    }
  }
  return out;
}

std::vector<EvalArgs> all_eval_args() {
  std::vector<EvalArgs> out;
  for (const std::string order : {"RO", "TO"}) {
    for (const std::vector<double>& ratios :
         {std::vector<double>{0.8, 0.1, 0.1}, {0.7, 0.0, 0.3}, {0.6, 0.4, 0.0}, {2, 1, 1}}) {
      for (const std::string group_by : {"user", "none"}) {
        EvalArgs a;
        a.order = order;
        a.ratios = ratios;
        a.group_by = group_by;
        out.push_back(a);
      }
    }
    for (const std::string mode : {"valid_and_test", "valid_only", "test_only"}) {
      EvalArgs a;
      a.order = order;
      a.split = EvalArgs::SplitKind::kLeaveOneOut;
      a.leave_one_mode = mode;
      out.push_back(a);
    }
  }
  return out;
}

std::string describe(const EvalArgs& a) {
  std::ostringstream s;
  s << a.order << ' ';
  if (a.split == EvalArgs::SplitKind::kRatio) {
    s << "RS [" << a.ratios[0] << ", " << a.ratios[1] << ", " << a.ratios[2] << "] group_by "
      << a.group_by;
  } else {
    s << "LS " << a.leave_one_mode;
  }
  return s.str();
}

}  // namespace

TEST_CASE("split_dataset matches a plain reference split on random tables", "[split]") {
  struct Table {
    int64_t rows;
    int users;
    uint32_t seed;
  };
  // Above and below the size at which split.cpp goes parallel; more groups than its 2^11
  // buckets (several groups a bucket), and fewer.
  const Table tables[] = {{200000, 5000, 1}, {150000, 60000, 2}, {300, 40, 3}};
  // One worker and three: the parallel passes must give the same split as the serial ones.
  const int threads = GENERATE(1, 3);
  recbole::ThreadPool::instance().set_threads(threads);
  for (const Table& t : tables) {
    TempDir dir;
    dir.write("rand/rand.inter", random_inter(t.rows, t.users, t.seed));
    DatasetOptions o;
    o.dataset = "rand";
    o.data_path = dir.path();
    o.load_col = std::map<std::string, std::vector<std::string>>{
        {"inter", {"user_id", "item_id", "timestamp"}}};
    const Dataset ds = Dataset::load(o);
    for (const EvalArgs& args : all_eval_args()) {
      o.eval_args = args;
      INFO(t.rows << " rows, " << t.users << " users, " << threads
                  << " threads: " << describe(args));
      const SplitDataset got = split_dataset(ds, o);
      const SplitDataset want = reference_split(ds, o);
      CHECK(got.train.rows == want.train.rows);
      CHECK(got.train.users == want.train.users);
      CHECK(got.train.items == want.train.items);
      CHECK(got.valid.rows == want.valid.rows);
      CHECK(got.valid.users == want.valid.users);
      CHECK(got.valid.items == want.valid.items);
      CHECK(got.test.rows == want.test.rows);
      CHECK(got.test.users == want.test.users);
      CHECK(got.test.items == want.test.items);
    }
  }
}

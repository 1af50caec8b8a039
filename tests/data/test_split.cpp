// Ordering and splitting: RecBole's split tests on build_dataset (TO/RO x RS/LS), the per-group
// rounding table of reference section 3.1, benchmark files, ml-100k totals, dump round trip.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "data_test_util.h"
#include "recbole/data/dataset.h"
#include "recbole/data/random_order.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"

using namespace recbole::data;
using recbole::data::testing::recbole_test_options;

namespace {

std::vector<int32_t> range(int32_t begin, int32_t end) {
  std::vector<int32_t> out(static_cast<size_t>(end - begin));
  std::iota(out.begin(), out.end(), begin);
  return out;
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

SplitDataset split_build_dataset(EvalArgs args) {
  DatasetOptions o = recbole_test_options("build_dataset");
  args.valid_mode = args.test_mode = "labeled";
  o.eval_args = args;
  const Dataset ds = Dataset::load(o);
  return split_dataset(ds, o);
}

EvalArgs rs(std::vector<double> ratios, const std::string& order) {
  EvalArgs a;
  a.split = EvalArgs::SplitKind::kRatio;
  a.ratios = std::move(ratios);
  a.order = order;
  return a;
}

EvalArgs ls(const std::string& mode, const std::string& order) {
  EvalArgs a;
  a.split = EvalArgs::SplitKind::kLeaveOneOut;
  a.leave_one_mode = mode;
  a.order = order;
  return a;
}

}  // namespace

TEST_CASE("TO RS 8:1:1 on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(rs({0.8, 0.1, 0.1}, "TO"));
  CHECK(s.train.items ==
        cat({range(1, 17), {1}, {1}, {1}, {1, 2, 3}, range(1, 8), range(1, 9), range(1, 10)}));
  CHECK(s.valid.items == cat({range(17, 19), {}, {}, {2}, {4}, {8}, {9}, {10}}));
  CHECK(s.test.items == cat({range(19, 21), {}, {2}, {3}, {5}, {9}, {10}, {11}}));
}

TEST_CASE("TO RS 8:2:0 on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(rs({0.8, 0.2, 0.0}, "TO"));
  CHECK(
      s.train.items ==
      cat({range(1, 17), {1}, {1}, {1, 2}, {1, 2, 3, 4}, range(1, 9), range(1, 9), range(1, 10)}));
  CHECK(s.valid.items == cat({range(17, 21), {}, {2}, {3}, {5}, {9}, {9, 10}, {10, 11}}));
  CHECK(s.test.size() == 0);
}

TEST_CASE("TO RS 8:0:2 on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(rs({0.8, 0.0, 0.2}, "TO"));
  CHECK(
      s.train.items ==
      cat({range(1, 17), {1}, {1}, {1, 2}, {1, 2, 3, 4}, range(1, 9), range(1, 9), range(1, 10)}));
  CHECK(s.valid.size() == 0);
  CHECK(s.test.items == cat({range(17, 21), {}, {2}, {3}, {5}, {9}, {9, 10}, {10, 11}}));
}

TEST_CASE("TO LS valid_and_test on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(ls("valid_and_test", "TO"));
  CHECK(s.train.items ==
        cat({range(1, 19), {1}, {1}, {1}, {1, 2, 3}, range(1, 8), range(1, 9), range(1, 10)}));
  CHECK(s.valid.items == cat({range(19, 20), {}, {}, {2}, {4}, {8}, {9}, {10}}));
  CHECK(s.test.items == cat({range(20, 21), {}, {2}, {3}, {5}, {9}, {10}, {11}}));
}

TEST_CASE("TO LS valid_only on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(ls("valid_only", "TO"));
  CHECK(
      s.train.items ==
      cat({range(1, 20), {1}, {1}, {1, 2}, {1, 2, 3, 4}, range(1, 9), range(1, 10), range(1, 11)}));
  CHECK(s.valid.items == cat({range(20, 21), {}, {2}, {3}, {5}, {9}, {10}, {11}}));
  CHECK(s.test.size() == 0);
}

TEST_CASE("TO LS test_only on build_dataset", "[split]") {
  const SplitDataset s = split_build_dataset(ls("test_only", "TO"));
  CHECK(
      s.train.items ==
      cat({range(1, 20), {1}, {1}, {1, 2}, {1, 2, 3, 4}, range(1, 9), range(1, 10), range(1, 11)}));
  CHECK(s.valid.size() == 0);
  CHECK(s.test.items == cat({range(20, 21), {}, {2}, {3}, {5}, {9}, {10}, {11}}));
}

TEST_CASE("RO RS 8:1:1, 8:2:0, 8:0:2 on build_dataset (sizes, as RecBole asserts)", "[split]") {
  {
    const SplitDataset s = split_build_dataset(rs({0.8, 0.1, 0.1}, "RO"));
    CHECK(s.train.size() == 16 + 1 + 1 + 1 + 3 + 7 + 8 + 9);
    CHECK(s.valid.size() == 2 + 0 + 0 + 1 + 1 + 1 + 1 + 1);
    CHECK(s.test.size() == 2 + 0 + 1 + 1 + 1 + 1 + 1 + 1);
  }
  {
    const SplitDataset s = split_build_dataset(rs({0.8, 0.2, 0.0}, "RO"));
    CHECK(s.train.size() == 16 + 1 + 1 + 2 + 4 + 8 + 8 + 9);
    CHECK(s.valid.size() == 4 + 0 + 1 + 1 + 1 + 1 + 2 + 2);
    CHECK(s.test.size() == 0);
  }
  {
    const SplitDataset s = split_build_dataset(rs({0.8, 0.0, 0.2}, "RO"));
    CHECK(s.train.size() == 16 + 1 + 1 + 2 + 4 + 8 + 8 + 9);
    CHECK(s.valid.size() == 0);
    CHECK(s.test.size() == 4 + 0 + 1 + 1 + 1 + 1 + 2 + 2);
  }
}

TEST_CASE("RO: every row once, users grouped in order of first appearance", "[split]") {
  DatasetOptions o = recbole_test_options("build_dataset");
  const Dataset ds = Dataset::load(o);
  const std::vector<int64_t> order = order_rows(ds, o.eval_args, o.seed);
  const SplitDataset s = split_dataset(ds, o);
  std::vector<int64_t> all;
  for (const Split* p : {&s.train, &s.valid, &s.test})
    all.insert(all.end(), p->rows.begin(), p->rows.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expect(static_cast<size_t>(ds.n_inters()));
  std::iota(expect.begin(), expect.end(), 0);
  CHECK(all == expect);
  // Train lists users group by group, groups in order of first appearance in the permutation.
  std::vector<int32_t> first_seen;
  for (int64_t r : order) {
    const int32_t u = ds.inter_users()[r];
    if (std::find(first_seen.begin(), first_seen.end(), u) == first_seen.end())
      first_seen.push_back(u);
  }
  std::vector<int32_t> train_groups;
  for (int32_t u : s.train.users) {
    if (train_groups.empty() || train_groups.back() != u) train_groups.push_back(u);
  }
  CHECK(train_groups == first_seen);
  // Within a group, rows keep the permutation's order.
  std::vector<int64_t> pos(order.size());
  for (size_t p = 0; p < order.size(); ++p) pos[order[p]] = static_cast<int64_t>(p);
  for (size_t i = 1; i < s.train.rows.size(); ++i) {
    if (s.train.users[i] == s.train.users[i - 1])
      CHECK(pos[s.train.rows[i]] > pos[s.train.rows[i - 1]]);
  }
}

TEST_CASE("RO uses torch's seeded randperm: same seed, same order, other seed, other order",
          "[split]") {
  const std::vector<int64_t> a = random_permutation(1000, 2020);
  const std::vector<int64_t> b = random_permutation(1000, 2020);
  const std::vector<int64_t> c = random_permutation(1000, 2021);
  CHECK(a == b);
  CHECK(a != c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
}

TEST_CASE("group_by none splits the whole ordered table once", "[split]") {
  DatasetOptions o = recbole_test_options("build_dataset");
  o.eval_args = rs({0.8, 0.1, 0.1}, "TO");
  o.eval_args.group_by = "none";
  const Dataset ds = Dataset::load(o);
  const SplitDataset s = split_dataset(ds, o);
  CHECK(s.train.size() == 49);  // 61 rows: int(0.1 * 61) = 6 each for valid and test
  CHECK(s.valid.size() == 6);
  CHECK(s.test.size() == 6);
  const std::vector<int64_t> order = order_rows(ds, o.eval_args, o.seed);
  CHECK(std::vector<int64_t>(order.begin(), order.begin() + 49) == s.train.rows);
}

TEST_CASE("per-group ratio sizes follow RecBole's rounding (reference 3.1)", "[split]") {
  const std::vector<double> r{0.8, 0.1, 0.1};
  using V = std::vector<int64_t>;
  CHECK(split_sizes_by_ratio(1, r) == V{1, 0, 0});
  CHECK(split_sizes_by_ratio(2, r) == V{1, 0, 1});
  CHECK(split_sizes_by_ratio(3, r) == V{1, 1, 1});
  CHECK(split_sizes_by_ratio(4, r) == V{2, 1, 1});
  for (int64_t n = 5; n <= 19; ++n) CHECK(split_sizes_by_ratio(n, r) == V{n - 2, 1, 1});
  CHECK(split_sizes_by_ratio(20, r) == V{16, 2, 2});
  CHECK(split_sizes_by_ratio(29, r) == V{25, 2, 2});
  CHECK(split_sizes_by_ratio(30, r) == V{24, 3, 3});
  bool all_floor = true;
  for (int64_t n = 10; n <= 200000; ++n) {
    const V s = split_sizes_by_ratio(n, r);
    all_floor = all_floor && s[1] == n / 10 && s[2] == n / 10 && s[0] == n - 2 * (n / 10);
  }
  CHECK(all_floor);
  // Any positive scale, zero parts allowed.
  CHECK(split_sizes_by_ratio(20, {8, 1, 1}) == V{16, 2, 2});
  CHECK(split_sizes_by_ratio(3, {0.8, 0.2, 0.0}) == V{2, 1, 0});
  CHECK(split_sizes_by_ratio(0, r) == V{0, 0, 0});
}

TEST_CASE("benchmark_filename: the three files are train, valid, test, unfiltered", "[split]") {
  DatasetOptions o = recbole_test_options("seq_benchmark");
  o.benchmark_filename = {"train", "valid", "test"};
  o.user_inter_num_interval = "[100,inf)";  // would empty the dataset, but is not applied
  const Dataset ds = Dataset::load(o);
  CHECK(ds.benchmark_sizes() == std::vector<int64_t>{7, 3, 4});
  const SplitDataset s = split_dataset(ds, o);
  CHECK(s.train.users == std::vector<int32_t>{1, 1, 1, 2, 3, 3, 4});
  CHECK(s.train.items == std::vector<int32_t>{1, 2, 3, 3, 4, 5, 4});
  CHECK(s.valid.users == std::vector<int32_t>{1, 1, 3});
  CHECK(s.valid.items == std::vector<int32_t>{4, 5, 6});
  CHECK(s.test.users == std::vector<int32_t>{1, 1, 3, 4});
  CHECK(s.test.items == std::vector<int32_t>{6, 7, 7, 5});
}

TEST_CASE("ml-100k: RecBole's statistics, first tokens, RS and LS totals", "[split][ml-100k]") {
  DatasetOptions o = testing::ml100k_options();
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_users() == 944);
  CHECK(ds.n_items() == 1683);
  CHECK(ds.n_inters() == 100000);
  const std::string summary = ds.summary();
  CHECK_THAT(summary, Catch::Contains("The sparsity of the dataset: 93.70575143257098%"));
  CHECK_THAT(summary, Catch::Contains("Average actions of users: 106.04453870625663"));
  CHECK_THAT(summary, Catch::Contains("Average actions of items: 59.45303210463734"));
  CHECK_THAT(summary,
             Catch::Contains("Remain Fields: ['user_id', 'item_id', 'rating', 'timestamp']"));
  std::vector<std::string> users, items;
  for (int32_t id = 1; id <= 5; ++id) {
    users.push_back(ds.user_token(id));
    items.push_back(ds.item_token(id));
  }
  CHECK(users == std::vector<std::string>{"196", "186", "22", "244", "166"});
  CHECK(items == std::vector<std::string>{"242", "302", "377", "51", "346"});
  // normalize_all: rating and timestamp in [0, 1].
  const std::vector<double>& rating = ds.inter_floats("rating");
  CHECK(*std::min_element(rating.begin(), rating.end()) == 0.0);
  CHECK(*std::max_element(rating.begin(), rating.end()) == 1.0);

  const SplitDataset rs_split = split_dataset(ds, o);
  CHECK(rs_split.train.size() == 80808);
  CHECK(rs_split.valid.size() == 9596);
  CHECK(rs_split.test.size() == 9596);

  o.eval_args.split = EvalArgs::SplitKind::kLeaveOneOut;
  o.eval_args.leave_one_mode = "valid_and_test";
  o.eval_args.order = "TO";
  const SplitDataset ls_split = split_dataset(ds, o);
  CHECK(ls_split.train.size() == 98114);
  CHECK(ls_split.valid.size() == 943);
  CHECK(ls_split.test.size() == 943);
}

TEST_CASE("dump_split writes files that load back through benchmark_filename", "[split]") {
  testing::TempDir dir;
  DatasetOptions o = testing::ml100k_options();
  o.normalize_all = false;
  const Dataset ds = Dataset::load(o);
  const SplitDataset s = split_dataset(ds, o);
  dump_split(ds, s, dir.path() + "/ml-100k");
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/ml-100k/ml-100k.train.inter.tmp"));
  {
    std::ifstream in(dir.path() + "/ml-100k/ml-100k.train.inter");
    std::string header;
    std::getline(in, header);
    CHECK(header == "user_id:token\titem_id:token\trating:float\ttimestamp:float");
  }
  DatasetOptions back = o;
  back.data_path = dir.path();
  back.benchmark_filename = {"train", "valid", "test"};
  const Dataset re = Dataset::load(back);
  CHECK(re.benchmark_sizes() ==
        std::vector<int64_t>{s.train.size(), s.valid.size(), s.test.size()});
  const SplitDataset rs2 = split_dataset(re, back);
  bool same = true;
  for (const auto& [a, b] : {std::pair{&s.train, &rs2.train}, std::pair{&s.valid, &rs2.valid},
                             std::pair{&s.test, &rs2.test}}) {
    for (int64_t i = 0; i < a->size(); ++i) {
      same = same && ds.user_token(a->users[i]) == re.user_token(b->users[i]) &&
             ds.item_token(a->items[i]) == re.item_token(b->items[i]) &&
             ds.inter_floats("timestamp")[a->rows[i]] == re.inter_floats("timestamp")[b->rows[i]] &&
             ds.inter_floats("rating")[a->rows[i]] == re.inter_floats("rating")[b->rows[i]];
    }
  }
  CHECK(same);
}

TEST_CASE("unused_col columns are not dumped", "[split]") {
  testing::TempDir dir;
  DatasetOptions o = testing::ml100k_options();
  o.unused_col = {{"inter", {"timestamp"}}};
  o.eval_args.order = "TO";  // the unused column still orders the rows
  const Dataset ds = Dataset::load(o);
  const SplitDataset s = split_dataset(ds, o);
  dump_split(ds, s, dir.path());
  std::ifstream in(dir.path() + "/ml-100k.test.inter");
  std::string header;
  std::getline(in, header);
  CHECK(header == "user_id:token\titem_id:token\trating:float");
}

TEST_CASE("unused_col naming an id field or a missing column is an error", "[split]") {
  DatasetOptions o = testing::ml100k_options();
  o.unused_col = {{"inter", {"item_id"}}};  // the dumped split would have no items
  REQUIRE_THROWS_WITH(Dataset::load(o),
                      Catch::Contains("unused_col: inter: \"item_id\" is an id field"));
  o.unused_col = {{"inter", {"nosuch"}}};
  REQUIRE_THROWS_WITH(Dataset::load(o), Catch::Contains("unused_col: inter: no column \"nosuch\""));
}

TEST_CASE("dump_split replaces the three files together or not at all", "[split]") {
  testing::TempDir dir;
  for (const char* part : {"train", "valid", "test"})
    dir.write(std::string("ml-100k.") + part + ".inter", std::string("old ") + part + "\n");
  // The valid part cannot be written (its temporary path is taken by a folder).
  std::filesystem::create_directories(dir.path() + "/ml-100k.valid.inter.tmp");
  DatasetOptions o = testing::ml100k_options();
  const Dataset ds = Dataset::load(o);
  const SplitDataset s = split_dataset(ds, o);
  REQUIRE_THROWS_AS(dump_split(ds, s, dir.path()), recbole::DataError);
  for (const char* part : {"train", "valid", "test"}) {
    std::ifstream in(dir.path() + "/ml-100k." + part + ".inter");
    std::string line;
    std::getline(in, line);
    CHECK(line == std::string("old ") + part);  // train used to be replaced already
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/ml-100k.train.inter.tmp"));
}

TEST_CASE("benchmark parts whose column types differ name the types", "[split]") {
  testing::TempDir dir;
  dir.write("b/b.train.inter", "user_id:token\titem_id:token\trating:float\nu\ta\t1\n");
  dir.write("b/b.valid.inter", "user_id:token\titem_id:token\trating:token\nu\tb\tx\n");
  dir.write("b/b.test.inter", "user_id:token\titem_id:token\trating:float\nu\tc\t1\n");
  DatasetOptions o;
  o.dataset = "b";
  o.data_path = dir.path();
  o.load_col.reset();
  o.benchmark_filename = {"train", "valid", "test"};
  // The names alone are the same: the message used to list two identical name lists.
  REQUIRE_THROWS_WITH(Dataset::load(o),
                      Catch::Contains("rating:token") && Catch::Contains("rating:float"));
}

TEST_CASE("TO compares times as float32, as RecBole's tensors do (ties keep file order)",
          "[split]") {
  // 1000000001 and 1000000000 are equal in float32: the stable sort keeps the file order.
  testing::TempDir dir;
  dir.write("f/f.inter",
            "user_id:token\titem_id:token\ttimestamp:float\n"
            "u\ta\t1000000001\nu\tb\t1000000000\nu\tc\t5\n");
  DatasetOptions o;
  o.dataset = "f";
  o.data_path = dir.path();
  o.load_col.reset();
  o.eval_args.order = "TO";
  const Dataset ds = Dataset::load(o);
  CHECK(order_rows(ds, o.eval_args, o.seed) == std::vector<int64_t>{2, 0, 1});
}

TEST_CASE("TO without a loaded time field is an error naming the field", "[split]") {
  DatasetOptions o = recbole_test_options("filter_by_inter_num");
  o.eval_args.order = "TO";
  const Dataset ds = Dataset::load(o);
  CHECK_THROWS_AS(split_dataset(ds, o), recbole::DataError);
  CHECK_THROWS_WITH(split_dataset(ds, o),
                    Catch::Contains("timestamp") && Catch::Contains("filter_by_inter_num.inter"));
}

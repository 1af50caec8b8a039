// Ports of RecBole's tests/data/test_dataset.py (class TestDataset, loading and preprocessing
// part) onto the same tiny datasets, with RecBole's expected values.
#include <catch2/catch.hpp>

#include <filesystem>

#include "data_test_util.h"
#include "recbole/data/dataset.h"
#include "recbole/utils/error.h"

using namespace recbole::data;
using recbole::data::testing::recbole_test_options;
using recbole::data::testing::recbole_tests_path;

namespace {

Dataset load_test(const std::string& name, void (*tweak)(DatasetOptions&) = nullptr) {
  DatasetOptions o = recbole_test_options(name);
  if (tweak != nullptr) tweak(o);
  return Dataset::load(o);
}

std::vector<int32_t> seq_row(const Column& c, int64_t row) {
  return std::vector<int32_t>(c.tokens.begin() + c.offsets[row],
                              c.tokens.begin() + c.offsets[row + 1]);
}
std::vector<double> float_seq_row(const Column& c, int64_t row) {
  return std::vector<double>(c.floats.begin() + c.offsets[row],
                             c.floats.begin() + c.offsets[row + 1]);
}

}  // namespace

TEST_CASE("filter_nan_user_or_item drops rows with missing ids in every table", "[dataset]") {
  const Dataset ds = load_test("filter_nan_user_or_item");
  CHECK(ds.n_inters() == 1);
  REQUIRE(ds.user_table() != nullptr);
  REQUIRE(ds.item_table() != nullptr);
  CHECK(ds.user_table()->n_rows() == 3);
  CHECK(ds.item_table()->n_rows() == 3);
}

TEST_CASE("rm_dup_inter first and last keep the earliest and latest duplicate", "[dataset]") {
  const Dataset first =
      load_test("remove_duplication", [](DatasetOptions& o) { o.rm_dup_inter = "first"; });
  REQUIRE(first.n_inters() == 1);
  CHECK(first.inter_floats("timestamp")[0] == 0);
  const Dataset last =
      load_test("remove_duplication", [](DatasetOptions& o) { o.rm_dup_inter = "last"; });
  REQUIRE(last.n_inters() == 1);
  CHECK(last.inter_floats("timestamp")[0] == 2);
}

TEST_CASE("rm_dup_inter re-sorts the interactions by time, which changes the remap", "[dataset]") {
  testing::TempDir dir;
  dir.write("t/t.inter",
            "user_id:token\titem_id:token\ttimestamp:float\nu3\ti3\t3\nu1\ti1\t1\nu2\ti2\t2\n"
            "u1\ti1\t5\n");
  DatasetOptions o;
  o.dataset = "t";
  o.data_path = dir.path();
  o.load_col.reset();
  const Dataset plain = Dataset::load(o);
  CHECK(plain.n_inters() == 4);
  CHECK(plain.user_id("u3") == 1);
  o.rm_dup_inter = "last";
  const Dataset dedup = Dataset::load(o);
  CHECK(dedup.n_inters() == 3);
  CHECK(dedup.inter_floats("timestamp") == std::vector<double>{2, 3, 5});
  CHECK(dedup.user_id("u2") == 1);
  CHECK(dedup.user_id("u3") == 2);
  CHECK(dedup.user_id("u1") == 3);
}

TEST_CASE("val_interval keeps rows inside the intervals", "[dataset]") {
  auto count = [](std::vector<ValueFilter> filters) {
    DatasetOptions o = recbole_test_options("filter_by_field_value");
    o.val_interval = std::move(filters);
    return Dataset::load(o).n_inters();
  };
  auto f = [](const std::string& field, const std::string& interval) {
    ValueFilter v;
    v.field = field;
    v.interval = interval;
    return v;
  };
  CHECK(count({f("timestamp", "[4,inf)")}) == 6);                                 // lowest value
  CHECK(count({f("timestamp", "(-inf,4]")}) == 5);                                // highest value
  CHECK(count({f("rating", "[0,0]")}) == 3);                                      // equal
  CHECK(count({f("rating", "(-inf,4);(4,inf)")}) == 9);                           // not equal
  CHECK(count({f("timestamp", "[3,8]")}) == 6);                                   // same field
  CHECK(count({f("timestamp", "[3,8]"), f("rating", "(-inf,4);(4,inf)")}) == 5);  // two fields
}

TEST_CASE("val_interval on a token field keeps the listed tokens", "[dataset]") {
  DatasetOptions o = recbole_test_options("filter_by_inter_num");
  ValueFilter v;
  v.field = "user_id";
  v.is_token_list = true;
  v.tokens = {"3", "4"};
  o.val_interval = {v};
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 6);
  CHECK(ds.n_users() == 3);
}

TEST_CASE("filter_inter_by_user_or_item true and false", "[dataset]") {
  CHECK(load_test("filter_inter_by_user_or_item", [](DatasetOptions& o) {
          o.filter_inter_by_user_or_item = true;
        }).n_inters() == 1);
  CHECK(load_test("filter_inter_by_user_or_item", [](DatasetOptions& o) {
          o.filter_inter_by_user_or_item = false;
        }).n_inters() == 2);
}

TEST_CASE("inter-num intervals: min, max, both sides, k-core to a fixed point", "[dataset]") {
  auto load = [](const std::string& user_iv, const std::string& item_iv) {
    DatasetOptions o = recbole_test_options("filter_by_inter_num");
    if (!user_iv.empty()) o.user_inter_num_interval = user_iv;
    if (!item_iv.empty()) o.item_inter_num_interval = item_iv;
    return Dataset::load(o);
  };
  struct Case {
    const char* user_interval;
    const char* item_interval;
    int64_t n_users, n_items;
  };
  const Case cases[] = {{"[2,inf)", "", 6, 7},        {"", "[2,inf)", 7, 6},
                        {"(-inf,2]", "", 6, 7},       {"", "(-inf,2]", 5, 5},
                        {"[2,inf)", "[2,inf)", 5, 5}, {"[2,3]", "[2,inf)", 3, 3}};
  for (const Case& c : cases) {
    INFO("user " << c.user_interval << ", item " << c.item_interval);
    const Dataset ds = load(c.user_interval, c.item_interval);
    CHECK(ds.n_users() == c.n_users);
    CHECK(ds.n_items() == c.n_items);
  }
}

TEST_CASE("inter-num interval null on both sides skips the filter", "[dataset]") {
  DatasetOptions o = recbole_test_options("filter_by_inter_num");
  o.user_inter_num_interval.clear();
  o.item_inter_num_interval.clear();
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 13);
  CHECK(ds.n_users() == 7);
  CHECK(ds.n_items() == 7);
}

TEST_CASE("rm_dup combined with val_interval", "[dataset]") {
  auto load = [](const std::string& keep) {
    DatasetOptions o = recbole_test_options("rm_dup_and_filter_value");
    o.rm_dup_inter = keep;
    ValueFilter v;
    v.field = "rating";
    v.interval = "(-inf,4]";
    o.val_interval = {v};
    return Dataset::load(o);
  };
  CHECK(load("first").n_inters() == 1);
  CHECK(load("last").n_inters() == 2);
}

TEST_CASE("rm_dup combined with the inter-num filter", "[dataset]") {
  DatasetOptions o = recbole_test_options("rm_dup_and_filter_by_inter_num");
  o.rm_dup_inter = "first";
  o.user_inter_num_interval = "[2,inf)";
  o.item_inter_num_interval = "[2,inf)";
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 4);
  CHECK(ds.n_users() == 3);
  CHECK(ds.n_items() == 3);
}

TEST_CASE("val_interval on feature fields combined with filter_inter_by_user_or_item",
          "[dataset]") {
  DatasetOptions o = recbole_test_options("filter_value_and_filter_inter_by_ui");
  ValueFilter age, price;
  age.field = "age";
  age.interval = "(-inf,2]";
  price.field = "price";
  price.interval = "(-inf,2);(2,inf)";
  o.val_interval = {age, price};
  o.filter_inter_by_user_or_item = true;
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 2);
  CHECK(ds.n_users() == 3);
  CHECK(ds.n_items() == 3);
}

TEST_CASE("val_interval combined with the inter-num filter", "[dataset]") {
  DatasetOptions o = recbole_test_options("filter_value_and_inter_num");
  for (const char* field : {"rating", "age", "price"}) {
    ValueFilter v;
    v.field = field;
    v.interval = "(-inf,0]";
    o.val_interval.push_back(v);
  }
  o.user_inter_num_interval = "[2,inf)";
  o.item_inter_num_interval = "[2,inf)";
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 4);
  CHECK(ds.n_users() == 3);
  CHECK(ds.n_items() == 3);
}

TEST_CASE("filter_inter_by_user_or_item combined with the inter-num filter", "[dataset]") {
  DatasetOptions o = recbole_test_options("filter_inter_by_ui_and_inter_num");
  o.filter_inter_by_user_or_item = true;
  o.user_inter_num_interval = "[2,inf)";
  o.item_inter_num_interval = "[2,inf)";
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_inters() == 4);
  CHECK(ds.n_users() == 3);
  CHECK(ds.n_items() == 3);
}

TEST_CASE("inter-num lower bound bans feature-only ids (strict <)", "[dataset]") {
  // filter_inter_by_ui_and_inter_num without the user/item filter: .user lists 1, 3, 4 and
  // .item 1, 3, 4; ids only in .user/.item with 0 interactions would be banned by [1,inf).
  testing::TempDir dir;
  dir.write("d/d.inter", "user_id:token\titem_id:token\n1\t1\n1\t2\n2\t1\n2\t2\n");
  dir.write("d/d.user", "user_id:token\tage:float\n1\t10\n2\t20\n9\t90\n");
  DatasetOptions o;
  o.dataset = "d";
  o.data_path = dir.path();
  o.load_col.reset();
  o.user_inter_num_interval = "[1,inf)";
  CHECK(Dataset::load(o).n_users() == 3);  // pad, 1, 2: user 9 (0 interactions) banned
  o.user_inter_num_interval = "(0,inf)";   // lower end 0: 0 < 0 is false, 9 stays
  CHECK(Dataset::load(o).n_users() == 4);
  o.user_inter_num_interval = "[0,inf)";
  CHECK(Dataset::load(o).n_users() == 4);
}

TEST_CASE("remap: ids by first appearance, every token field its own space", "[dataset][remap]") {
  const Dataset ds = load_test("remap_id");
  int32_t expect = 1;
  for (const char* t : {"ua", "ub", "uc", "ud"}) CHECK(ds.user_id(t) == expect++);
  expect = 1;
  for (const char* t : {"ia", "ib", "ic", "id"}) CHECK(ds.item_id(t) == expect++);
  CHECK(ds.inter_users() == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(ds.inter_items() == std::vector<int32_t>{1, 2, 3, 4});
  const Table& inter = ds.inter_table();
  CHECK(inter.column("add_user").tokens == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(inter.column("add_item").tokens == std::vector<int32_t>{1, 2, 3, 4});
  const Column& ul = inter.column("user_list");
  CHECK(seq_row(ul, 0) == std::vector<int32_t>{1, 2});
  CHECK(seq_row(ul, 1).empty());
  CHECK(seq_row(ul, 2) == std::vector<int32_t>{3, 4, 1});
  CHECK(seq_row(ul, 3) == std::vector<int32_t>{5});
  CHECK(ds.user_token(0) == "[PAD]");
  CHECK(ds.item_token(0) == "[PAD]");
  CHECK(ds.user_token(3) == "uc");
}

TEST_CASE("feature tables re-indexed by id, NaN filled", "[dataset][remap]") {
  const Dataset ds = load_test("ui_feat_preparation_and_fill_nan",
                               [](DatasetOptions& o) { o.filter_inter_by_user_or_item = false; });
  const Table* user = ds.user_table();
  const Table* item = ds.item_table();
  REQUIRE(user != nullptr);
  REQUIRE(item != nullptr);
  std::vector<std::string> user_tokens, item_tokens;
  for (int32_t id : user->column("user_id").tokens) user_tokens.push_back(ds.user_token(id));
  for (int32_t id : item->column("item_id").tokens) item_tokens.push_back(ds.item_token(id));
  CHECK(user_tokens == std::vector<std::string>{"[PAD]", "ua", "ub", "uc", "ud", "ue"});
  CHECK(item_tokens == std::vector<std::string>{"[PAD]", "ia", "ib", "ic", "id", "ie"});
  CHECK(ds.inter_floats("rating")[3] == 1.0);
  CHECK(user->column("age").floats[4] == 1.5);
  CHECK(item->column("price").floats[4] == 1.5);
  const Column& tl = ds.inter_table().column("time_list");
  CHECK(float_seq_row(tl, 0) == std::vector<double>{1., 2., 3.});
  CHECK(float_seq_row(tl, 1) == std::vector<double>{2.});
  CHECK(float_seq_row(tl, 2).empty());
  CHECK(float_seq_row(tl, 3) == std::vector<double>{5., 4.});
  const Column& profile = user->column("profile");
  CHECK(seq_row(profile, 0).empty());
  CHECK(seq_row(profile, 1) == std::vector<int32_t>{1, 2, 3});
  CHECK(seq_row(profile, 2).empty());
  CHECK(seq_row(profile, 3) == std::vector<int32_t>{3});
  CHECK(seq_row(profile, 4).empty());
  CHECK(seq_row(profile, 5) == std::vector<int32_t>{3, 2});
  // Feature-only ids (ue, ie) get ids after the interaction ones and count in n_users/n_items.
  CHECK(ds.n_users() == 6);
  CHECK(ds.n_items() == 6);
}

TEST_CASE("threshold creates the label field and drops the source field", "[dataset]") {
  const Dataset ds = load_test("set_label_by_threshold", [](DatasetOptions& o) {
    o.threshold = std::make_pair(std::string("rating"), 4.0);
  });
  CHECK(ds.inter_floats("label") == std::vector<double>{1., 0., 1., 0.});
  CHECK_FALSE(ds.has_inter_field("rating"));
  CHECK(ds.field_names() == std::vector<std::string>{"user_id", "item_id", "label"});
}

TEST_CASE("normalize_all and normalize_field (min-max)", "[dataset]") {
  const Dataset all = load_test("normalize", [](DatasetOptions& o) { o.normalize_all = true; });
  CHECK(all.inter_floats("rating") == std::vector<double>{0., .25, 1., .75, .5});
  CHECK(all.inter_floats("star") == std::vector<double>{1., .5, 0., .25, .75});
  const Dataset one = load_test("normalize", [](DatasetOptions& o) {
    o.normalize_field = {"rating"};
    o.normalize_all = false;
  });
  CHECK(one.inter_floats("rating") == std::vector<double>{0., .25, 1., .75, .5});
  CHECK(one.inter_floats("star") == std::vector<double>{4., 2., 0., 1., 3.});
}

TEST_CASE("normalize: a constant column becomes 1.0", "[dataset]") {
  testing::TempDir dir;
  dir.write("c/c.inter", "user_id:token\titem_id:token\tw:float\n1\t1\t7\n2\t2\t7\n");
  DatasetOptions o;
  o.dataset = "c";
  o.data_path = dir.path();
  o.load_col.reset();
  o.normalize_all = true;
  CHECK(Dataset::load(o).inter_floats("w") == std::vector<double>{1., 1.});
}

TEST_CASE("normalize_field and normalize_all together are rejected", "[dataset]") {
  DatasetOptions o = recbole_test_options("normalize");
  o.normalize_field = {"rating"};
  o.normalize_all = true;
  CHECK_THROWS_WITH(Dataset::load(o),
                    Catch::Contains("normalize_field") && Catch::Contains("normalize_all"));
}

TEST_CASE("every RecBole test folder for general recommenders loads", "[dataset]") {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(recbole_tests_path())) {
    const std::string name = entry.path().filename().string();
    DatasetOptions o = recbole_test_options(name);
    if (name == "seq_benchmark") o.benchmark_filename = {"train", "valid", "test"};
    INFO(name);
    Dataset ds = Dataset::load(o);
    CHECK(ds.n_inters() > 0);
    CHECK(ds.n_users() >= 2);
    CHECK(ds.n_items() >= 2);
    ++loaded;
  }
  CHECK(loaded >= 24);
}

TEST_CASE("test/test_data: the extra field on its last line is reported", "[dataset]") {
  // RecBole's tests/test_data/test/test.inter ends with a row of 5 fields under a 4-field header;
  // pandas' python engine with usecols silently drops the extra field, this reader rejects the
  // row (a row of the wrong length is an error here, by design).
  DatasetOptions o = recbole_test_options("test");
  o.data_path = std::string(RECBOLE_SHARED_DIR) + "/datasets/recbole-tests/test_data";
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("test.inter:6018: expected 4 fields") &&
                                          Catch::Contains("found 5"));
}

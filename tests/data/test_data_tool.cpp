// DatasetOptions from a built Config, and the recbole_data tool end to end.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>

#include "data_test_util.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset_options.h"
#include "recbole/utils/error.h"

using namespace recbole::data;

namespace {

recbole::config::Config build(std::vector<std::pair<std::string, std::string>> overrides) {
  return recbole::data::testing::config_of("ml-100k", std::move(overrides));
}

using recbole::data::testing::ToolRun;
ToolRun run(const std::string& args) { return recbole::data::testing::run_recbole_data(args); }

}  // namespace

TEST_CASE("DatasetOptions::from_config reads ml-100k's defaults", "[options]") {
  const DatasetOptions o = DatasetOptions::from_config(build({}));
  CHECK(o.dataset == "ml-100k");
  REQUIRE(o.load_col.has_value());
  CHECK(o.load_col->at("inter") ==
        std::vector<std::string>{"user_id", "item_id", "rating", "timestamp"});
  CHECK(o.user_inter_num_interval.empty());
  CHECK(o.normalize_all);
  CHECK(o.eval_args.split == EvalArgs::SplitKind::kRatio);
  CHECK(o.eval_args.ratios == std::vector<double>{0.8, 0.1, 0.1});
  CHECK(o.eval_args.order == "RO");
  CHECK(o.eval_args.group_by == "user");
  CHECK(o.seed == 2020);
  CHECK(o.field_separator == "\t");
}

TEST_CASE("DatasetOptions::from_config reads overrides", "[options]") {
  const DatasetOptions o = DatasetOptions::from_config(build({
      {"eval_args", "{split: {LS: valid_only}, order: TO, mode: {valid: uni100, test: full}}"},
      {"load_col", "~"},
      {"val_interval", "{rating: \"[3,inf)\", user_id: ['1', '2']}"},
      {"threshold", "{rating: 4}"},
      {"normalize_all", "~"},
      {"normalize_field", "[timestamp]"},
      {"rm_dup_inter", "last"},
      {"benchmark_filename", "[train, valid, test]"},
      {"unused_col", "{inter: [timestamp]}"},
      {"seed", "7"},
  }));
  CHECK_FALSE(o.load_col.has_value());
  CHECK(o.eval_args.split == EvalArgs::SplitKind::kLeaveOneOut);
  CHECK(o.eval_args.leave_one_mode == "valid_only");
  CHECK(o.eval_args.order == "TO");
  CHECK(o.eval_args.valid_mode == "uni100");
  CHECK(o.eval_args.test_mode == "full");
  REQUIRE(o.val_interval.size() == 2);
  REQUIRE(o.threshold.has_value());
  CHECK(o.threshold->first == "rating");
  CHECK(o.threshold->second == 4.0);
  CHECK(o.normalize_field == std::vector<std::string>{"timestamp"});
  CHECK_FALSE(o.normalize_all);
  CHECK(o.rm_dup_inter == "last");
  CHECK(o.benchmark_filename.size() == 3);
  CHECK(o.unused_col.at("inter") == std::vector<std::string>{"timestamp"});
  CHECK(o.seed == 7);
}

TEST_CASE("benchmark_filename naming one part twice is an error", "[options]") {
  // [train, train, train] tested on the training data, with rc 0.
  REQUIRE_THROWS_WITH(DatasetOptions::from_config(build({{"benchmark_filename", "[a, b, a]"}})),
                      Catch::Contains("\"a\" is given twice"));
  REQUIRE_NOTHROW(DatasetOptions::from_config(build({{"benchmark_filename", "[a, b, c]"}})));
}

TEST_CASE("recbole_data on ml-100k prints RecBole's statistics and split sizes", "[tool]") {
  const ToolRun r =
      run("--dataset=ml-100k --data_path=" + testing::shared_datasets_path() + " --state=ERROR");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("The number of users: 944") &&
                           Catch::Contains("The number of items: 1683") &&
                           Catch::Contains("The number of inters: 100000") &&
                           Catch::Contains("The sparsity of the dataset: 93.70575143257098%") &&
                           Catch::Contains("80808 / 9596 / 9596") &&
                           Catch::Contains("user tokens (ids 1..): 196 186 22 244 166") &&
                           Catch::Contains("item tokens (ids 1..): 242 302 377 51 346"));
}

TEST_CASE("recbole_data: LS valid_and_test and --dump_split", "[tool]") {
  testing::TempDir dir;
  const ToolRun r = run("--dataset=ml-100k --data_path=" + testing::shared_datasets_path() +
                        " \"--eval_args={split: {LS: valid_and_test}, order: TO}\"" +
                        " --dump_split=" + dir.path());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("98114 / 943 / 943"));
  for (const char* part : {"train", "valid", "test"}) {
    CHECK(std::filesystem::exists(dir.path() + "/ml-100k." + part + ".inter"));
  }
}

TEST_CASE("recbole_data: errors go to stderr with exit status 1", "[tool]") {
  testing::TempDir dir;
  dir.write("bad/bad.inter", "user_id:token\titem_id:token\trating:float\n1\t2\tx\n");
  ToolRun r = run("--dataset=bad --data_path=" + dir.path() + " --load_col=~");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("recbole_data: error:") &&
                           Catch::Contains("bad.inter:2: column rating:float: cannot parse \"x\""));
  r = run("--dataset=bad --data_path=" + dir.path() + " --verbose=maybe");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("--verbose: expected true or false, got \"maybe\""));
  r = run("--dataset=nothere --data_path=" + dir.path());
  CHECK(r.status == 1);
  // As recbole_run: a missing dataset is downloaded when its name or download_url says from where.
  CHECK_THAT(r.output, Catch::Contains("nothere/nothere.inter: not found, and \"nothere\" is not "
                                       "a dataset that can be downloaded by name"));
}

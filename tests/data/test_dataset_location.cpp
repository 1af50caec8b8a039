// Where a dataset is read from (recbole/data/dataset_location.h): data_path first, then the
// shipped ml-100k, then a download; and recbole_data taking the same path as recbole_run.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data_test_util.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset_location.h"
#include "recbole/data/dataset_options.h"

using namespace recbole::data;
using Copy = DatasetLocation::Copy;
namespace fs = std::filesystem;

namespace {

const std::string kShippedRoot = fs::canonical(std::string(RECBOLE_SOURCE_DIR) + "/datasets");

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

using recbole::data::testing::config_of;
using recbole::data::testing::ToolRun;
ToolRun recbole_data(const std::string& args) {
  return recbole::data::testing::run_recbole_data(args);
}

}  // namespace

TEST_CASE("the shipped ml-100k is byte-identical to the shared copy", "[location]") {
  for (const char* suffix : {"inter", "user", "item"}) {
    INFO(suffix);
    const std::string shipped = kShippedRoot + "/ml-100k/ml-100k." + suffix;
    REQUIRE(fs::exists(shipped));
    CHECK(slurp(shipped) == slurp(testing::shared_datasets_path() + "/ml-100k/ml-100k." + suffix));
  }
}

TEST_CASE("a dataset in data_path wins over the shipped copy", "[location]") {
  testing::TempDir dir;
  dir.write("ml-100k/ml-100k.inter", "user_id:token\titem_id:token\n1\t2\n");
  const DatasetLocation loc = locate_dataset("ml-100k", dir.path(), false);
  CHECK(loc.copy == Copy::kDataPath);
  CHECK(loc.data_path == dir.path());
  CHECK(DatasetOptions::from_config(config_of("ml-100k", {{"data_path", dir.path()}})).data_path ==
        dir.path());
}

TEST_CASE("a dataset missing from data_path is read from the shipped copy", "[location]") {
  testing::TempDir dir;
  const std::string data_path = dir.path() + "/not-yet";
  DatasetLocation loc = locate_dataset("ml-100k", data_path, false);
  CHECK(loc.copy == Copy::kShipped);
  CHECK(loc.data_path == kShippedRoot);
  CHECK_THAT(loc.describe("ml-100k"),
             Catch::Contains("shipped with recbole-cpp in " + kShippedRoot + "/ml-100k"));
  CHECK(DatasetOptions::from_config(config_of("ml-100k", {{"data_path", data_path}})).data_path ==
        kShippedRoot);
  // ensure_dataset neither downloads nor copies anything into data_path.
  loc = ensure_dataset(config_of("ml-100k", {{"data_path", data_path}}));
  CHECK(loc.copy == Copy::kShipped);
  CHECK_FALSE(fs::exists(data_path));
  // An empty folder (what a failed download leaves) does not count as the user's copy.
  fs::create_directories(data_path + "/ml-100k");
  CHECK(locate_dataset("ml-100k", data_path, false).copy == Copy::kShipped);
}

TEST_CASE("no shipped copy with download_url, benchmark_filename or a folder of other files",
          "[location]") {
  testing::TempDir dir;
  // The user asked for their own archive.
  CHECK(locate_dataset("ml-100k", dir.path(), true).copy == Copy::kMissing);
  const std::string url = "file://" + dir.path() + "/ml-100k.zip";
  CHECK(DatasetOptions::from_config(
            config_of("ml-100k", {{"data_path", dir.path()}, {"download_url", url}}))
            .data_path == dir.path());
  // Pre-split files are the user's own.
  CHECK(locate_dataset(config_of("ml-100k", {{"data_path", dir.path()},
                                             {"benchmark_filename", "[train, valid, test]"}}))
            .copy == Copy::kDataPath);
  // A folder of misnamed files: the download's error names it rather than a shipped copy
  // hiding it.
  dir.write("ml-100k/ml-100k.inter.txt", "user_id:token\titem_id:token\n1\t2\n");
  CHECK(locate_dataset("ml-100k", dir.path(), false).copy == Copy::kMissing);
  // Nothing shipped under that name.
  CHECK(locate_dataset("ml-1m", dir.path() + "/none", false).copy == Copy::kMissing);
  CHECK(locate_dataset("../ml-100k", dir.path(), false).copy == Copy::kMissing);
}

TEST_CASE("recbole_data reads the shipped ml-100k when data_path has none", "[tool]") {
  testing::TempDir dir;
  const ToolRun r = recbole_data("--dataset=ml-100k --data_path=" + dir.path() + "/empty");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("dataset ml-100k: the copy shipped with recbole-cpp in " +
                                       kShippedRoot + "/ml-100k") &&
                           Catch::Contains("The number of inters: 100000") &&
                           Catch::Contains("80808 / 9596 / 9596"));
  CHECK_FALSE(fs::exists(dir.path() + "/empty"));
}

TEST_CASE("recbole_data downloads a missing dataset from download_url", "[tool]") {
  testing::TempDir dir;
  std::string rows = "user_id:token\titem_id:token\n";
  for (int u = 1; u <= 30; ++u)
    for (int i = 1; i <= 10; ++i) rows += std::to_string(u) + "\t" + std::to_string(u + i) + "\n";
  dir.write("src/mini/mini.inter", rows);
  const std::string archive = dir.path() + "/mini.tar.gz";
  REQUIRE(std::system(("tar -czf " + archive + " -C " + dir.path() + "/src mini").c_str()) == 0);

  ToolRun r = recbole_data("--dataset=mini --data_path=" + dir.path() +
                           "/data --download_url=file://" + archive);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output,
             Catch::Contains("The number of inters: 300") &&
                 Catch::Contains("dataset mini: the copy in " + dir.path() + "/data/mini"));
  CHECK(slurp(dir.path() + "/data/mini/mini.inter") == rows);

  r = recbole_data("--dataset=gone --data_path=" + dir.path() +
                   " --download_retries=0 --download_url=file://" + dir.path() + "/gone.zip");
  CHECK(r.status == 1);
  CHECK_THAT(r.output,
             Catch::Contains("recbole_data: error: dataset gone: cannot download file://" +
                             dir.path() + "/gone.zip"));
}

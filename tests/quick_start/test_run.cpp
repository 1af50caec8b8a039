// run(): the checks made before any training (empty splits, output paths, id fields).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "recbole/data/dataset_options.h"
#include "recbole/quick_start.h"
#include "recbole/utils/error.h"
#include "tests/trainer/hand_run.h"

using recbole::testing::tiny_config;

TEST_CASE("USER_ID_FIELD and ITEM_ID_FIELD naming one column is a ConfigError", "[trainer]") {
  auto config = tiny_config({{"USER_ID_FIELD", "item_id"}});
  REQUIRE_THROWS_AS(recbole::data::DatasetOptions::from_config(config), recbole::ConfigError);
  REQUIRE_THROWS_WITH(recbole::data::DatasetOptions::from_config(config),
                      Catch::Contains("USER_ID_FIELD and ITEM_ID_FIELD"));
}

TEST_CASE("an empty test split is an error before training, not NaN metrics", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_empty_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tiny");
  // Two users with one interaction each: RO 8/1/1 puts every row in train.
  std::ofstream(dir / "tiny" / "tiny.inter")
      << "user_id:token\titem_id:token\trating:float\ttimestamp:float\n1\t1\t3\t1\n2\t2\t3\t2\n";
  auto config = tiny_config({{"data_path", dir.string()},
                             {"epochs", "1"},
                             {"log_dir", (dir / "log").string()},
                             {"checkpoint_dir", (dir / "saved").string()}});
  REQUIRE_THROWS_AS(recbole::run(config), recbole::DataError);
  REQUIRE_THROWS_WITH(recbole::run(config),
                      Catch::Contains("the test split is empty (train 2, valid 0, test 0"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("output paths of the wrong kind are ConfigErrors before any work", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_bad_outputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "a_dir");
  std::ofstream(dir / "a_file") << "keep me\n";
  // data_path does not exist: a check made after loading would report that instead.
  auto with = [&](const std::string& key, const std::string& value) {
    return tiny_config({{"data_path", (dir / "no_data").string()},
                        {"log_dir", (dir / "log").string()},
                        {"checkpoint_dir", (dir / "saved").string()},
                        {key, value}});
  };
  for (const char* key : {"checkpoint_dir", "log_dir"}) {
    INFO(key);
    REQUIRE_THROWS_WITH(recbole::run(with(key, (dir / "a_file").string())),
                        Catch::Contains(std::string(key) + ": \"" + (dir / "a_file").string() +
                                        "\" is a file; expected a directory"));
  }
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", (dir / "a_dir").string())),
                      Catch::Contains("is a directory; expected the path of a JSON file"));
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", (dir / "a_file" / "r.json").string())),
                      Catch::Contains("is a file, not a directory"));
  // Folders that cannot be made or written (used to fail after training as internal errors).
  REQUIRE_THROWS_WITH(recbole::run(with("checkpoint_dir", "/proc/recbole_no_such")),
                      Catch::Contains("checkpoint_dir: cannot create \"/proc/recbole_no_such\""));
  REQUIRE_THROWS_WITH(recbole::run(with("result_file", "/proc/r.json")),
                      Catch::Contains("result_file: cannot create files in \"/proc\""));
  std::ifstream kept(dir / "a_file");
  std::string line;
  std::getline(kept, line);
  REQUIRE(line == "keep me");
  std::filesystem::remove_all(dir);
}

TEST_CASE("an empty train split is an error before training", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_empty_train";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tiny");
  std::ofstream(dir / "tiny" / "tiny.inter")
      << "user_id:token\titem_id:token\n1\t1\n1\t2\n2\t2\n2\t3\n";
  auto config = tiny_config({{"data_path", dir.string()},
                             {"eval_args", "{split: {RS: [0, 0, 1]}}"},
                             {"log_dir", (dir / "log").string()},
                             {"checkpoint_dir", (dir / "saved").string()}});
  REQUIRE_THROWS_WITH(recbole::run(config), Catch::Contains("the train split is empty (train 0"));
  std::filesystem::remove_all(dir);
}

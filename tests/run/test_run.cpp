// run(): the checks made before any training (empty splits, output paths, id fields).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "recbole/config/config_entries.h"
#include "recbole/data/dataset_options.h"
#include "recbole/utils/error.h"
#include "run/run_recbole.h"
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
  // The report likewise.
  REQUIRE_THROWS_WITH(recbole::run(with("report", (dir / "a_dir").string())),
                      Catch::Contains("report: \"" + (dir / "a_dir").string() +
                                      "\" is a directory; expected the path of an HTML file"));
  REQUIRE_THROWS_WITH(recbole::run(with("report", (dir / "a_file" / "r.html").string())),
                      Catch::Contains("is a file, not a directory"));
  REQUIRE_THROWS_WITH(recbole::run(with("report", "/proc/r.html")),
                      Catch::Contains("report: cannot create files in \"/proc\""));
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

TEST_CASE("the result file holds the config and dataset statistics, and the report is written",
          "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_result_report";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tiny");
  {
    std::ofstream inter(dir / "tiny" / "tiny.inter");
    inter << "user_id:token\titem_id:token\n";
    for (int u = 1; u <= 30; ++u)
      for (int k = 0; k < 6; ++k) inter << u << "\t" << 1 + (u * 3 + k * 5) % 40 << "\n";
  }
  const int epochs = 3;
  auto config = tiny_config({{"data_path", dir.string()},
                             {"epochs", std::to_string(epochs)},
                             {"show_progress", "false"},
                             {"log_dir", (dir / "log").string()},
                             {"checkpoint_dir", (dir / "saved").string()},
                             {"result_file", (dir / "out" / "r.json").string()},
                             {"report", (dir / "out" / "r.html").string()}});
  // (REQUIRE throughout: libtorch's glog, included by hand_run.h, defines its own CHECK.)
  const recbole::RunResult run = recbole::run(config);
  std::ifstream in(dir / "out" / "r.json");
  REQUIRE(in);
  const nlohmann::json j = nlohmann::json::parse(in);

  // The effective configuration, key by key with its source, as the log prints it.
  const std::vector<recbole::config::ConfigEntry> entries = recbole::config::config_entries(config);
  REQUIRE(j.at("config").size() == entries.size());
  for (size_t k = 0; k < entries.size(); ++k) {
    REQUIRE(j["config"][k]["key"] == entries[k].key);
    REQUIRE(j["config"][k]["value"] == entries[k].value);
    REQUIRE(j["config"][k]["source"] == config.source(entries[k].key));
  }
  REQUIRE(config.dump().find("epochs = 3    (" + config.source("epochs") + ")") !=
          std::string::npos);

  const nlohmann::json& stats = j.at("dataset_stats");
  REQUIRE(stats.at("n_interactions") == 180);
  REQUIRE(stats.at("train").get<int64_t>() + stats.at("valid").get<int64_t>() +
              stats.at("test").get<int64_t>() ==
          180);
  REQUIRE(stats.at("n_users") == run.dataset_stats.n_users);
  REQUIRE(stats.at("sparsity").get<double>() > 0);

  // The report: one page with the loss curve of every epoch.
  std::ifstream page(dir / "out" / "r.html");
  REQUIRE(page);
  std::stringstream html;
  html << page.rdbuf();
  const std::string text = html.str();
  REQUIRE(text.rfind("<!DOCTYPE html>", 0) == 0);
  REQUIRE(text.find("BPR on tiny") != std::string::npos);
  const size_t loss = text.find("data-series=\"train loss\"");
  REQUIRE(loss != std::string::npos);
  const size_t points = text.find("points=\"", loss);
  const std::string list = text.substr(points + 8, text.find('"', points + 8) - points - 8);
  REQUIRE(std::count(list.begin(), list.end(), ',') == epochs);
  std::filesystem::remove_all(dir);
}

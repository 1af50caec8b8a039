// recbole_compare: its --config_files groups, and a comparison of two models over two seeds run
// as a process (compare.json's mean and sample sd, compare.csv, the table).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/experiment/comparison.h"
#include "tests/run/experiment/tool_test_util.h"

using namespace recbole::testing;  // NOLINT(google-build-using-namespace)

TEST_CASE("recbole_compare config files: common ones and MODEL: groups") {
  const auto f = recbole::experiment::parse_compare_config_files(
      "common.yaml; BPR:bpr.yaml,bpr2.yaml;EASE:ease.yaml", {"BPR", "EASE", "Pop"});
  CHECK(f.for_model("BPR") == std::vector<std::string>{"common.yaml", "bpr.yaml", "bpr2.yaml"});
  CHECK(f.for_model("EASE") == std::vector<std::string>{"common.yaml", "ease.yaml"});
  CHECK(f.for_model("Pop") == std::vector<std::string>{"common.yaml"});
  CHECK_THROWS_WITH(
      recbole::experiment::parse_compare_config_files("LightGCN:l.yaml", {"BPR"}),
      Catch::StartsWith("--config_files: \"LightGCN:l.yaml\": \"LightGCN\" is not one "
                        "of --models (BPR)"));
}

TEST_CASE("recbole_compare: two models over two seeds, mean and sample sd of each metric") {
  const std::string dir = fresh_dir("compare");
  const std::string bpr_yaml = write(dir + "/bpr.yaml", "embedding_size: 24\n");
  const std::string out = dir + "/out";
  const int rc = run_tool(
      "recbole_compare",
      {"--models=Pop,BPR", "--dataset=ml-100k", "--data_path=" + kData, "--seeds=1,2", "--epochs=1",
       "--parallel=2", "--config_files=BPR:" + bpr_yaml, "--output_dir=" + out},
      dir + "/compare.log");
  const std::string log = slurp(dir + "/compare.log");
  INFO(log);
  REQUIRE(rc == 0);
  const nlohmann::json c = read_json(out + "/compare.json");
  CHECK(c["dataset"] == "ml-100k");
  CHECK(c["seeds"] == nlohmann::json::array({1, 2}));
  REQUIRE(c["metrics"].size() >= 1);
  CHECK(std::find(c["metrics"].begin(), c["metrics"].end(), "recall@10") != c["metrics"].end());
  REQUIRE(c["models"].size() == 2);
  CHECK(c["models"][0]["model"] == "Pop");
  CHECK(c["models"][1]["model"] == "BPR");
  for (const auto& m : c["models"]) {
    REQUIRE(m["runs"].size() == 2);
    CHECK(m["runs"][0]["seed"] == 1);
    CHECK(m["runs"][1]["seed"] == 2);
    for (const auto& r : m["runs"]) CHECK(r["status"] == "ok");
    for (const auto& metric : c["metrics"]) {
      const std::string k = metric.get<std::string>();
      const double a = m["runs"][0]["test_result"][k].get<double>();
      const double b = m["runs"][1]["test_result"][k].get<double>();
      CHECK(m["mean"][k].get<double>() == Approx((a + b) / 2).epsilon(1e-12));
      CHECK(m["sd"][k].get<double>() == Approx(std::fabs(a - b) / std::sqrt(2.0)).margin(1e-12));
    }
    const double sa = m["runs"][0]["seconds"], sb = m["runs"][1]["seconds"];
    CHECK(m["seconds_mean"].get<double>() == Approx((sa + sb) / 2));
  }
  // The seeds give different splits, so the metrics differ between runs.
  CHECK(c["models"][0]["sd"]["recall@10"].get<double>() > 0);
  // BPR's own file reached BPR's runs only.
  CHECK_THAT(slurp(out + "/runs/BPR-1.log"), Catch::Contains("bpr.yaml"));
  CHECK(slurp(out + "/runs/Pop-1.log").find("bpr.yaml") == std::string::npos);
  // The table: a row per model with mean ± sd.
  CHECK(recbole::testing::count(log, " ± ") >= 2 * static_cast<int>(c["metrics"].size()));
  const std::vector<std::string> csv = lines_of(slurp(out + "/compare.csv"));
  // The report: one bar per model in each metric's chart.
  const std::string html = slurp(out + "/report.html");
  CHECK_THAT(html, Catch::Contains("<svg") && Catch::Contains("Pop") && Catch::Contains("BPR"));
  REQUIRE(csv.size() == 3);
  CHECK_THAT(csv[0], Catch::StartsWith("model,runs_ok,"));
  CHECK_THAT(csv[1], Catch::StartsWith("Pop,2,"));
  CHECK_THAT(csv[2], Catch::StartsWith("BPR,2,"));
}

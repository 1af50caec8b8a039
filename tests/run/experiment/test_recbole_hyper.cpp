// recbole_hyper end to end, as a process: a small exhaustive BPR search on ml-100k (its outputs,
// and the best configuration rerun alone giving its trial's test result), a failing trial among
// good ones, mistakes reported before any trial starts, and a stop signal (with a stand-in for
// recbole_run whose trials finish or wait on command).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "tests/run/experiment/tool_test_util.h"

namespace fs = std::filesystem;
using namespace recbole::testing;  // NOLINT(google-build-using-namespace)

TEST_CASE("recbole_hyper: a 2x2 exhaustive BPR search, and its best configuration rerun alone") {
  const std::string dir = fresh_dir("hyper_grid");
  const std::string params =
      write(dir + "/hyper.test",
            "# two learning rates, two sizes\nlearning_rate choice [0.001, 0.01]\n"
            "embedding_size choice [16, 32]\n");
  const std::string out = dir + "/out";
  std::vector<std::string> args = bpr_args(2);
  for (std::string a : {"--params_file=" + params, std::string("--algo=exhaustive"),
                        std::string("--parallel=2"), "--output_dir=" + out})
    args.push_back(a);
  REQUIRE(run_tool("recbole_hyper", args, dir + "/hyper.log") == 0);
  const std::string log = slurp(dir + "/hyper.log");
  INFO(log);

  const nlohmann::json s = read_json(out + "/trials.json");
  CHECK(s["model"] == "BPR");
  CHECK(s["dataset"] == "ml-100k");
  CHECK(s["algo"] == "exhaustive");
  CHECK(s["valid_metric"] == "mrr@10");
  CHECK(s["valid_metric_bigger"] == true);
  CHECK(s["parallel"] == 2);
  CHECK(s["max_evals"] == 4);
  CHECK(s["interrupted"] == false);
  CHECK(s["params"] == nlohmann::json::parse(R"([{"name":"learning_rate","kind":"choice",
      "values":[0.001,0.01]},{"name":"embedding_size","kind":"choice","values":[16,32]}])"));
  REQUIRE(s["trials"].size() == 4);
  const std::vector<std::pair<double, int>> grid = {
      {0.001, 16}, {0.001, 32}, {0.01, 16}, {0.01, 32}};
  nlohmann::json best = nullptr;
  for (size_t i = 0; i < 4; ++i) {
    const nlohmann::json& t = s["trials"][i];
    CHECK(t["id"] == i);
    CHECK(t["params"]["learning_rate"] == grid[i].first);
    CHECK(t["params"]["embedding_size"] == grid[i].second);
    CHECK(t["status"] == "ok");
    CHECK(t["error"] == "");
    REQUIRE(t["valid_score"].is_number());
    CHECK(t["test_result"].contains("recall@10"));
    CHECK(t["result_file"] == "trials/" + std::to_string(i) + ".json");
    // The score recorded is the trial's own result file's.
    const nlohmann::json r = read_json(out + "/" + t["result_file"].get<std::string>());
    CHECK(r["best_valid_score"] == t["valid_score"]);
    CHECK(r["test_result"] == t["test_result"]);
    CHECK(fs::exists(out + "/trials/" + std::to_string(i) + ".log"));
    if (best.is_null() || t["valid_score"] > best["valid_score"]) best = t;
  }
  CHECK(s["best_trial"] == best["id"]);
  // The trials differ: the learning rate matters over two epochs.
  CHECK(s["trials"][0]["valid_score"] != s["trials"][2]["valid_score"]);

  // One line per finished trial, then the table with the best marked.
  CHECK(recbole::testing::count(log, "] trial ") == 4);
  CHECK(recbole::testing::count(log, " ok  valid mrr@10=") == 4);
  CHECK(log.find("best: trial " + std::to_string(best["id"].get<int>())) != std::string::npos);

  const std::vector<std::string> csv = lines_of(slurp(out + "/trials.csv"));
  REQUIRE(csv.size() == 5);
  CHECK_THAT(csv[0], Catch::StartsWith("id,learning_rate,embedding_size,valid_mrr@10,test_"));
  CHECK_THAT(csv[0], Catch::EndsWith(",seconds,status,error"));
  CHECK_THAT(csv[1], Catch::StartsWith("0,0.001,16,"));
  CHECK_THAT(csv[4], Catch::StartsWith("3,0.01,32,"));
  CHECK_THAT(csv[4], Catch::EndsWith(",ok,"));

  const std::string best_yaml = slurp(out + "/best.yaml");
  // The report: a scatter per parameter, with every successful trial.
  CHECK_THAT(slurp(out + "/report.html"), Catch::Contains("<svg") &&
                                              Catch::Contains("learning_rate") &&
                                              Catch::Contains("embedding_size"));
  CHECK(best_yaml.find("trial " + std::to_string(best["id"].get<int>()) + ", valid mrr@10") !=
        std::string::npos);
  const YAML::Node y = YAML::Load(best_yaml);
  CHECK(y.size() == 2);
  CHECK(y["learning_rate"].as<double>() == best["params"]["learning_rate"].get<double>());
  CHECK(y["embedding_size"].as<int>() == best["params"]["embedding_size"].get<int>());

  // The best configuration alone: the same test result as its trial (same seed, same machine;
  // the thread count differs and must not matter).
  std::vector<std::string> rerun = bpr_args(2);
  for (std::string a :
       {"--config_files=" + out + "/best.yaml", "--result_file=" + dir + "/rerun.json",
        "--checkpoint_dir=" + dir + "/saved", "--log_dir=" + dir + "/log"})
    rerun.push_back(a);
  REQUIRE(run_tool("recbole_run", rerun, dir + "/rerun.log") == 0);
  const nlohmann::json r = read_json(dir + "/rerun.json");
  CHECK(r["best_valid_score"] == best["valid_score"]);
  CHECK(r["test_result"] == best["test_result"]);
}

TEST_CASE("recbole_hyper: a trial that recbole_run rejects is recorded as failed, the others run") {
  const std::string dir = fresh_dir("hyper_failing");
  const std::string params = write(dir + "/hyper.test", "learning_rate choice [0.001, -1, 0.01]\n");
  std::vector<std::string> args = bpr_args(1);
  args.push_back("--params_file=" + params);
  args.push_back("--output_dir=" + dir + "/out");
  REQUIRE(run_tool("recbole_hyper", args, dir + "/hyper.log") == 0);
  const nlohmann::json s = read_json(dir + "/out/trials.json");
  INFO(slurp(dir + "/hyper.log"));
  REQUIRE(s["trials"].size() == 3);
  CHECK(s["trials"][0]["status"] == "ok");
  CHECK(s["trials"][2]["status"] == "ok");
  const nlohmann::json& bad = s["trials"][1];
  CHECK(bad["status"] == "failed");
  CHECK(bad["valid_score"].is_null());
  // The error is recbole_run's own message, the last line of the trial's log.
  CHECK_THAT(bad["error"].get<std::string>(), Catch::Contains("learning_rate"));
  CHECK_THAT(bad["error"].get<std::string>(), Catch::Contains("-1"));
  CHECK(s["best_trial"].is_number());
  CHECK(s["best_trial"] != 1);
  const std::vector<std::string> csv = lines_of(slurp(dir + "/out/trials.csv"));
  REQUIRE(csv.size() == 4);
  CHECK(csv[2].find(",failed,") != std::string::npos);
}

TEST_CASE("recbole_hyper: mistakes are reported before any trial starts") {
  const std::string dir = fresh_dir("hyper_mistakes");
  // A stand-in recbole_run that leaves a mark when started.
  const std::string marker = dir + "/started";
  const std::string fake = write(dir + "/fake_run", "#!/bin/sh\ntouch " + marker + "\nexit 1\n");
  ::chmod(fake.c_str(), 0755);
  const std::string good = write(dir + "/good.test", "learning_rate choice [0.001]\n");
  auto hyper = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = bpr_args(1);
    args.push_back("--recbole_run=" + fake);
    args.insert(args.end(), extra.begin(), extra.end());
    const int rc = run_tool("recbole_hyper", args, dir + "/hyper.log");
    return std::make_pair(rc, slurp(dir + "/hyper.log"));
  };
  SECTION("an output folder that cannot be created") {
    write(dir + "/blocker", "a file, not a folder\n");
    const auto [rc, log] = hyper({"--params_file=" + good, "--output_dir=" + dir + "/blocker/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains("recbole_hyper: error: --output_dir: cannot create the folder "
                                    "\"" +
                                    dir + "/blocker/out\""));
  }
  SECTION("a params file with a typo in a model key (the models' keys are known)") {
    const std::string bad = write(dir + "/bad.test",
                                  "learning_rate choice [0.001]\n"
                                  "embeding_size choice [8]\n");
    const auto [rc, log] = hyper({"--params_file=" + bad, "--output_dir=" + dir + "/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains(bad + ":2: unknown config key \"embeding_size\"; did you mean "
                                          "\"embedding_size\"?"));
  }
  SECTION("a parameter that is searched and fixed at once") {
    const auto [rc, log] =
        hyper({"--params_file=" + good, "--learning_rate=0.1", "--output_dir=" + dir + "/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains(good + ":1: learning_rate is searched and also given as "
                                           "--learning_rate=0.1"));
  }
  SECTION("a range for exhaustive search") {
    const std::string ranged = write(dir + "/ranged.test", "learning_rate loguniform -8,0\n");
    const auto [rc, log] = hyper({"--params_file=" + ranged, "--output_dir=" + dir + "/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains(ranged + ":1: learning_rate loguniform: exhaustive search "
                                             "needs every parameter as `choice [...]`"));
  }
  SECTION("a result file, which each trial has of its own") {
    const auto [rc, log] =
        hyper({"--params_file=" + good, "--result_file=r.json", "--output_dir=" + dir + "/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains("--result_file: recbole_hyper sets each trial's own"));
  }
  SECTION("a bad value of an option every trial gets") {
    const auto [rc, log] =
        hyper({"--params_file=" + good, "--epochs=-3", "--output_dir=" + dir + "/out"});
    CHECK(rc == 1);
    CHECK_THAT(log, Catch::Contains("epochs"));
  }
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("recbole_hyper: SIGINT stops the running trial, keeps the finished ones, exits 130") {
  const std::string dir = fresh_dir("hyper_stop");
  // A stand-in recbole_run: embedding_size 64 trains until it is asked to stop, then writes an
  // interrupted result and exits 130 as recbole_run does; the others finish at once with a
  // score of 0.<size>.
  const std::string fake = write(dir + "/fake_run", R"(#!/bin/sh
for a in "$@"; do
  case "$a" in
    --result_file=*) out="${a#--result_file=}" ;;
    --embedding_size=*) emb="${a#--embedding_size=}" ;;
  esac
done
if [ "$emb" = 64 ]; then
  trap 'echo "{\"interrupted\":true,\"best_valid_score\":0.9,\"test_result\":{}}" > "$out"; exit 130' INT
  echo training
  while true; do sleep 0.05; done
fi
echo "{\"interrupted\":false,\"best_valid_score\":0.$emb,\"test_result\":{\"recall@10\":0.5}}" > "$out"
)");
  ::chmod(fake.c_str(), 0755);
  const std::string params = write(dir + "/hyper.test", "embedding_size choice [16, 64, 32, 48]\n");
  const std::string out = dir + "/out";
  std::vector<std::string> args = {
      kTools + "/recbole_hyper", "--model=BPR",  "--dataset=ml-100k",
      "--params_file=" + params, "--parallel=2", "--recbole_run=" + fake,
      "--output_dir=" + out};
  recbole::testing::Proc p = recbole::testing::start(args, {}, dir + "/hyper.log");
  // Trials 0 and 2 (then 3) finish; trial 1 keeps its slot until the signal.
  bool three_done = false;
  for (int i = 0; i < 600 && !three_done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (fs::exists(out + "/trials.json")) {
      try {
        three_done = read_json(out + "/trials.json")["trials"].size() == 3;
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  REQUIRE(three_done);
  ::kill(p.pid, SIGINT);
  CHECK(recbole::testing::wait_for(p, 30) == 130);
  INFO(slurp(dir + "/hyper.log"));
  const nlohmann::json s = read_json(out + "/trials.json");
  CHECK(s["interrupted"] == true);
  REQUIRE(s["trials"].size() == 4);
  CHECK(s["trials"][0]["status"] == "ok");
  CHECK(s["trials"][1]["status"] == "interrupted");
  CHECK(s["trials"][1]["error"] == "stopped by SIGINT");
  CHECK(s["trials"][2]["status"] == "ok");
  CHECK(s["trials"][3]["status"] == "ok");
  // The interrupted trial's partial score is kept but never chosen: 0.48 is the best finished.
  CHECK(s["trials"][1]["valid_score"] == 0.9);
  CHECK(s["best_trial"] == 3);
  CHECK_THAT(slurp(out + "/best.yaml"), Catch::Contains("embedding_size: 48"));
}

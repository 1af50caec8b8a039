#include <catch2/catch.hpp>

#include <string>

#include "recbole/utils/error.h"
#include "report_test_util.h"
#include "run/report/html_report.h"
#include "run/report/templates.h"

using nlohmann::json;
using namespace recbole::report;
using recbole::report::test::count;
using recbole::report::test::fixture;
using recbole::report::test::polyline_sizes;

namespace {

// The page stands alone: no script, nothing loaded from elsewhere.
void check_self_contained(const std::string& html) {
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(count(html, "</html>") == 1);
  CHECK(count(html, "<script") == 0);
  CHECK(count(html, "http://") == count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(count(html, "https://") == 0);
  CHECK(count(html, "<link") == 0);
  CHECK(count(html, "{{") == 0);  // every template tag was filled in
  CHECK(count(html, "<style>") == 1);
}

size_t valid_epochs(const json& history, const std::string& metric) {
  size_t n = 0;
  for (const json& e : history) n += e["valid_result"].contains(metric);
  return n;
}

}  // namespace

TEST_CASE("the templates are compiled into the library", "[report]") {
  for (const char* name : {"run.html", "search.html", "compare.html", "style.css"})
    CHECK_FALSE(template_text(name).empty());
  CHECK_THROWS_AS(template_text("nope.html"), recbole::Error);
}

TEST_CASE("run report: curves per epoch, the best epoch, results, timing, config", "[report]") {
  const json run = fixture("run.json");
  const std::string html = render_run_report(run);
  check_self_contained(html);
  const json& history = run["history"];
  // The loss curve has a point per epoch; each validation metric one per validated epoch.
  std::vector<size_t> expected{history.size()};
  for (const auto& [metric, value] : history[0]["valid_result"].items())
    expected.push_back(valid_epochs(history, metric));
  CHECK(polyline_sizes(html) == expected);
  // The best epoch is marked on both charts.
  CHECK(count(html, "class=\"marker\"") == 2);
  CHECK(count(html, "best epoch " + std::to_string(run["best_epoch"].get<int>())) >= 2);
  // A row per metric, with best valid and test values.
  for (const auto& [metric, value] : run["test_result"].items())
    CHECK(count(html, "<td>" + metric + "</td>") == 1);
  CHECK(count(html, "0.2341") == 1);  // test recall@10 of the fixture
  // The configuration with each value's source, escaped.
  for (const json& e : run["config"]) {
    CHECK(count(html, e["key"].get<std::string>()) >= 1);
  }
  CHECK(count(html, "configs/model/BPR.yaml:1") == 1);
  CHECK(count(html, "/data/a&amp;b &lt;test&gt;/&quot;q&quot;") == 1);
  CHECK(count(html, "<test>") == 0);
  // Dataset statistics and timing.
  CHECK(count(html, "<td>users</td><td class=\"num\">944</td>") == 1);
  CHECK(count(html, "93.7000%") == 1);
  CHECK(count(html, "peak RSS") >= 1);
  CHECK(count(html, "id=\"interrupted\"") == 0);
}

TEST_CASE("run report of a fitted-once model: no curves, says so", "[report]") {
  const std::string html = render_run_report(fixture("run_fit_once.json"));
  check_self_contained(html);
  CHECK(polyline_sizes(html).empty());
  CHECK(count(html, ">no data</text>") == 2);
  CHECK(count(html, "No per-epoch history") == 1);
  CHECK(count(html, "<td>recall@10</td>") == 1);
  // Neither configuration nor dataset statistics in this document.
  CHECK(count(html, "no data</p>") + count(html, "no data</td>") == 2);
}

TEST_CASE("run report of an interrupted run says where to resume", "[report]") {
  json run = fixture("run.json");
  run["interrupted"] = true;
  run["stop_signal"] = "SIGINT";
  run["resume_checkpoint"] = "saved/BPR-x-resume-e8.pth";
  run["test_result"] = json::object();
  const std::string html = render_run_report(run);
  CHECK(count(html, "id=\"interrupted\"") == 1);
  CHECK(count(html, "Interrupted by SIGINT after 8 epoch(s)") == 1);
  CHECK(count(html, "--resume=saved/BPR-x-resume-e8.pth") == 1);
}

TEST_CASE("run report: missing, null and mistyped fields do not stop it", "[report]") {
  check_self_contained(render_run_report(json::object()));
  const std::string html = render_run_report(json{{"model", 3},
                                                  {"history", "not a list"},
                                                  {"best_valid_score", nullptr},
                                                  {"timing", {{"total_s", "x"}}},
                                                  {"config", {{{"key", "k"}}}}});
  check_self_contained(html);
  CHECK(count(html, ">no data</text>") == 2);
  const json odd_history = {{"history",
                             {{{"epoch", 0}, {"train_loss", nullptr}, {"valid_result", nullptr}},
                              {{"epoch", "one"}, {"train_loss", 1.0}}}}};
  check_self_contained(render_run_report(odd_history));
  CHECK_THROWS_AS(render_run_report(json::array()), recbole::Error);
  CHECK_THROWS_AS(render_run_report(json(3)), recbole::Error);
}

TEST_CASE("search report: a scatter per parameter, the best trial, failed trials", "[report]") {
  const json search = fixture("search.json");
  const std::string html = render_search_report(search);
  check_self_contained(html);
  size_t scored = 0, failed = 0;
  for (const json& t : search["trials"]) {
    scored += t["valid_score"].is_number();
    failed += t["status"] == "failed";
  }
  const size_t n_params = search["params"].size();
  CHECK(count(html, "<svg") == n_params);
  // Every trial with a score is a point in every scatter; the best one is marked in each.
  CHECK(count(html, "<circle class=\"point") == scored * n_params);
  CHECK(count(html, "<circle class=\"point best\"") == n_params);
  CHECK(count(html, "(log scale)") == 1);  // learning_rate is loguniform
  // A row per trial, the best one marked; the failed one with its error, escaped.
  CHECK(count(html, "<tr class=\"trial") == search["trials"].size());
  CHECK(count(html, "<tr class=\"trial best\">") == 1);
  CHECK(count(html, ">failed</td>") == failed);
  CHECK(count(html, "lower learning_rate &lt;or&gt; set clip_grad_norm") == 1);
  CHECK(count(html, "id=\"best\"") == 1);
}

TEST_CASE("search report: no successful trial, no best, null scores", "[report]") {
  json search = fixture("search.json");
  for (json& t : search["trials"]) {
    t["status"] = "failed";
    t["valid_score"] = nullptr;
  }
  search["best_trial"] = nullptr;
  const std::string html = render_search_report(search);
  check_self_contained(html);
  CHECK(count(html, "<circle") == 0);
  CHECK(count(html, ">no data</text>") == search["params"].size());
  CHECK(count(html, "no data: no trial succeeded") == 1);
  check_self_contained(render_search_report(json::object()));
}

TEST_CASE("search report: string choices are categories", "[report]") {
  const json search = {
      {"valid_metric", "ndcg@10"},
      {"params", {{{"name", "learner"}, {"kind", "choice"}, {"values", {"adam", "sgd"}}}}},
      {"best_trial", 1},
      {"trials",
       {{{"id", 0}, {"params", {{"learner", "sgd"}}}, {"status", "ok"}, {"valid_score", 0.1}},
        {{"id", 1}, {"params", {{"learner", "adam"}}}, {"status", "ok"}, {"valid_score", 0.2}}}}};
  const std::string html = render_search_report(search);
  CHECK(count(html, "<circle class=\"point") == 2);
  CHECK(count(html, ">adam</text>") == 1);
  CHECK(count(html, ">sgd</text>") == 1);
}

TEST_CASE("comparison report: a bar chart per metric with error bars, mean ± sd", "[report]") {
  const json comparison = fixture("compare.json");
  const std::string html = render_compare_report(comparison);
  check_self_contained(html);
  const size_t n_metrics = comparison["metrics"].size();
  const size_t n_models = comparison["models"].size();
  CHECK(count(html, "<svg") == n_metrics);
  CHECK(count(html, "<rect class=\"bar\"") == n_metrics * n_models);
  CHECK(count(html, "<path class=\"error-bar\"") == n_metrics * n_models);
  // mean ± sd as the table shows it, for the first model and metric.
  const json& m = comparison["models"][0];
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.4f \xC2\xB1 %.4f", m["mean"]["recall@10"].get<double>(),
                m["sd"]["recall@10"].get<double>());
  CHECK(count(html, cell) == 1);
  size_t runs = 0;
  for (const json& model : comparison["models"]) runs += model["runs"].size();
  CHECK(count(html, "<tr class=\"run\">") == runs);
  CHECK(count(html, "out of memory: &lt;device&gt; &amp; more") == 1);
  CHECK(count(html, "2/3 ok") == 1);  // LightGCN's failed seed
}

TEST_CASE("comparison report: models without means draw no bars", "[report]") {
  json comparison = fixture("compare.json");
  for (json& m : comparison["models"]) {
    m["mean"] = json::object();
    m["sd"] = nullptr;
  }
  const std::string html = render_compare_report(comparison);
  check_self_contained(html);
  CHECK(count(html, "<rect class=\"bar\"") == 0);
  CHECK(count(html, ">no data</text>") == comparison["metrics"].size());
  check_self_contained(render_compare_report(json::object()));
}

#include "run/experiment/hyper_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "recbole/utils/atomic_write.h"
#include "recbole/utils/text.h"
#include "run/experiment/search.h"
#include "run/experiment/table_text.h"
#include "run/experiment/trial_runner.h"
#include "run/report/html_report.h"

namespace recbole::experiment {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

bool sets_key(const HyperSearchOptions& o, const std::string& key) {
  for (const auto& [k, v] : o.overrides)
    if (k == key) return true;
  for (const Parameter& p : o.space.params)
    if (p.name == key) return true;
  return false;
}

std::vector<std::string> trial_args(const HyperSearchOptions& o, const Assignment& a,
                                    const std::string& result_file) {
  std::vector<std::string> args = {"--model=" + o.model, "--dataset=" + o.dataset};
  if (!o.config_files.empty()) args.push_back("--config_files=" + join(o.config_files, ","));
  for (const auto& [k, v] : o.overrides) args.push_back("--" + k + "=" + v);
  for (const auto& [k, v] : a) args.push_back("--" + k + "=" + value_text(v));
  for (const auto& [k, v] : o.trial_only)
    if (!sets_key(o, k)) args.push_back("--" + k + "=" + v);
  if (o.num_threads > 0 && !sets_key(o, "num_threads"))
    args.push_back("--num_threads=" + std::to_string(o.num_threads));
  args.push_back("--result_file=" + result_file);
  return args;
}

// The recbole_run command that reruns the best configuration: the search's own files and
// options, with best.yaml after the files.
std::string rerun_command(const HyperSearchOptions& o) {
  std::vector<std::string> files = o.config_files;
  files.push_back((fs::path(o.output_dir) / "best.yaml").string());
  std::string cmd = "recbole_run " + shell_quote("--model=" + o.model) + " " +
                    shell_quote("--dataset=" + o.dataset) + " " +
                    shell_quote("--config_files=" + join(files, ","));
  for (const auto& [k, v] : o.overrides) cmd += " " + shell_quote("--" + k + "=" + v);
  return cmd;
}

std::vector<std::string> param_names(const nlohmann::json& search) {
  std::vector<std::string> names;
  for (const auto& p : search["params"]) names.push_back(p["name"].get<std::string>());
  return names;
}

// Test metric names over every trial, in first-seen order.
std::vector<std::string> test_metrics(const nlohmann::json& search) {
  std::vector<std::string> names;
  for (const auto& t : search["trials"])
    for (const auto& [k, v] : t["test_result"].items())
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  return names;
}

std::string param_text(const nlohmann::json& params, const std::string& name) {
  return params.contains(name) ? value_text(params[name]) : "";
}

std::string trial_line(size_t finished, size_t planned, const nlohmann::json& trial,
                       const std::vector<std::string>& names, const std::string& metric) {
  std::string line = "[" + std::to_string(finished) + "/" + std::to_string(planned) + "] trial " +
                     std::to_string(trial["id"].get<size_t>()) + " " +
                     trial["status"].get<std::string>();
  if (trial["valid_score"].is_number())
    line += "  valid " + metric + "=" + fixed(trial["valid_score"].get<double>(), 4);
  if (!trial["error"].get<std::string>().empty()) line += ": " + trial["error"].get<std::string>();
  line += " ";
  for (const std::string& n : names) line += " " + n + "=" + param_text(trial["params"], n);
  line += "  " + fixed(trial["seconds"].get<double>(), 1) + "s";
  return line;
}

// The best successful trial with a valid score: the largest (or smallest) score, the lowest id
// among equals; null when none.
nlohmann::json best_trial(const nlohmann::json& trials, bool bigger) {
  nlohmann::json best = nullptr;
  double best_score = 0;
  for (const auto& t : trials) {
    if (t["status"] != "ok" || !t["valid_score"].is_number()) continue;
    const double s = t["valid_score"].get<double>();
    if (best.is_null() || (bigger ? s > best_score : s < best_score)) {
      best = t["id"];
      best_score = s;
    }
  }
  return best;
}

const nlohmann::json* trial_by_id(const nlohmann::json& search, const nlohmann::json& id) {
  for (const auto& t : search["trials"])
    if (t["id"] == id) return &t;
  return nullptr;
}

}  // namespace

HyperSearchResult run_hyper_search(const HyperSearchOptions& o, std::ostream& out) {
  const fs::path dir(o.output_dir);
  fs::create_directories(dir / "trials");
  std::unique_ptr<SearchAlgorithm> search = make_search(o.algo, o.space, o.seed, o.max_evals);
  const size_t planned = planned_trials(o.algo, o.space, o.max_evals);
  nlohmann::json doc = {{"model", o.model},
                        {"dataset", o.dataset},
                        {"algo", o.algo},
                        {"valid_metric", o.valid_metric},
                        {"valid_metric_bigger", o.valid_metric_bigger},
                        {"params", o.space.to_json()},
                        {"started", utc_timestamp()},
                        {"seconds", 0.0},
                        {"interrupted", false},
                        {"parallel", o.parallel},
                        {"max_evals", planned},
                        {"best_trial", nullptr},
                        {"trials", nlohmann::json::array()}};
  const std::vector<std::string> names = param_names(doc);
  const std::string rerun = rerun_command(o);
  std::map<size_t, Assignment> proposed;
  std::map<size_t, nlohmann::json> finished_trials;
  std::vector<Observation> done;
  size_t next_id = 0;
  const auto t0 = Clock::now();

  auto write_outputs = [&] {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& [id, t] : finished_trials) trials.push_back(t);
    doc["trials"] = trials;
    doc["best_trial"] = best_trial(trials, o.valid_metric_bigger);
    doc["seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
    write_file_atomically((dir / "trials.json").string(), doc.dump(2) + "\n", "trials.json");
    write_file_atomically((dir / "trials.csv").string(), trials_csv(doc), "trials.csv");
    const std::string best = best_yaml(doc, rerun);
    if (!best.empty()) write_file_atomically((dir / "best.yaml").string(), best, "best.yaml");
    write_file_atomically((dir / "report.html").string(), report::render_search_report(doc),
                          "report.html");
  };

  out << "recbole_hyper: " << o.algo << " search of " << o.model << " on " << o.dataset << ", "
      << planned << " trial(s), " << o.parallel << " at once, into " << o.output_dir << "\n"
      << std::flush;
  write_outputs();
  TrialRunner runner({o.recbole_run, o.parallel});
  const int sig = runner.run(
      [&]() -> std::optional<TrialJob> {
        if (next_id >= planned) return std::nullopt;
        std::optional<Assignment> a = search->propose(next_id, done);
        if (!a) return std::nullopt;
        TrialJob job;
        job.id = next_id++;
        job.result_file = (dir / "trials" / (std::to_string(job.id) + ".json")).string();
        job.log_file = (dir / "trials" / (std::to_string(job.id) + ".log")).string();
        job.args = trial_args(o, *a, job.result_file);
        proposed[job.id] = *a;
        return job;
      },
      [&](const TrialJob& job, const TrialOutcome& outcome) {
        const Assignment& a = proposed[job.id];
        const nlohmann::json t = trial_json(job.id, assignment_json(a), outcome,
                                            "trials/" + std::to_string(job.id) + ".json");
        finished_trials[job.id] = t;
        if (outcome.status == TrialStatus::kOk && outcome.valid_score)
          done.push_back({a, o.valid_metric_bigger ? -*outcome.valid_score : *outcome.valid_score});
        write_outputs();
        out << trial_line(finished_trials.size(), planned, t, names, o.valid_metric) << "\n"
            << std::flush;
      });
  doc["interrupted"] = sig != 0;
  write_outputs();
  out << "\n" << trials_table(doc);
  if (const nlohmann::json* best = trial_by_id(doc, doc["best_trial"]))
    out << "best: trial " << (*best)["id"].get<size_t>() << ", valid " << o.valid_metric << " = "
        << fixed((*best)["valid_score"].get<double>(), 4)
        << "; its configuration: " << (dir / "best.yaml").string() << "\n";
  else
    out << "no trial succeeded; see " << (dir / "trials").string() << "/<id>.log\n";
  out << std::flush;
  return {doc, sig};
}

std::string trials_csv(const nlohmann::json& search) {
  const std::vector<std::string> names = param_names(search);
  const std::vector<std::string> metrics = test_metrics(search);
  std::vector<std::string> header = {"id"};
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("valid_" + search["valid_metric"].get<std::string>());
  for (const std::string& m : metrics) header.push_back("test_" + m);
  for (const char* h : {"seconds", "status", "error"}) header.push_back(h);
  std::string csv = csv_row(header);
  for (const auto& t : search["trials"]) {
    std::vector<std::string> row = {std::to_string(t["id"].get<size_t>())};
    for (const std::string& n : names) row.push_back(param_text(t["params"], n));
    row.push_back(t["valid_score"].is_number() ? number_text(t["valid_score"].get<double>()) : "");
    for (const std::string& m : metrics)
      row.push_back(t["test_result"].contains(m) ? number_text(t["test_result"][m].get<double>())
                                                 : "");
    row.push_back(fixed(t["seconds"].get<double>(), 3));
    row.push_back(t["status"].get<std::string>());
    row.push_back(t["error"].get<std::string>());
    csv += csv_row(row);
  }
  return csv;
}

std::string best_yaml(const nlohmann::json& search, const std::string& rerun) {
  const nlohmann::json* best = trial_by_id(search, search["best_trial"]);
  if (!best) return "";
  std::string yaml = "# recbole_hyper: best of " + std::to_string(search["trials"].size()) +
                     " trial(s) (" + search["algo"].get<std::string>() + ") of " +
                     search["model"].get<std::string>() + " on " +
                     search["dataset"].get<std::string>() + ": trial " +
                     std::to_string((*best)["id"].get<size_t>()) + ", valid " +
                     search["valid_metric"].get<std::string>() + " = " +
                     number_text((*best)["valid_score"].get<double>()) + "\n";
  std::string test;
  for (const auto& [k, v] : (*best)["test_result"].items())
    test += " " + k + "=" + number_text(v.get<double>());
  if (!test.empty()) yaml += "# test:" + test + "\n";
  yaml += "# rerun: " + rerun + "\n";
  for (const std::string& n : param_names(search))
    yaml += n + ": " + param_text((*best)["params"], n) + "\n";
  return yaml;
}

std::string trials_table(const nlohmann::json& search) {
  const std::vector<std::string> names = param_names(search);
  const std::vector<std::string> metrics = test_metrics(search);
  std::vector<std::string> header = {"", "trial"};
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("valid " + search["valid_metric"].get<std::string>());
  for (const std::string& m : metrics) header.push_back("test " + m);
  header.push_back("seconds");
  header.push_back("status");
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : search["trials"]) {
    std::vector<std::string> row = {t["id"] == search["best_trial"] ? "*" : "",
                                    std::to_string(t["id"].get<size_t>())};
    for (const std::string& n : names) row.push_back(param_text(t["params"], n));
    row.push_back(t["valid_score"].is_number() ? fixed(t["valid_score"].get<double>(), 4) : "-");
    for (const std::string& m : metrics)
      row.push_back(t["test_result"].contains(m) ? fixed(t["test_result"][m].get<double>(), 4)
                                                 : "-");
    row.push_back(fixed(t["seconds"].get<double>(), 1));
    row.push_back(t["status"].get<std::string>());
    rows.push_back(row);
  }
  return text_table(header, rows);
}

}  // namespace recbole::experiment

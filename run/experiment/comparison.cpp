#include "run/experiment/comparison.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/text.h"
#include "run/experiment/table_text.h"
#include "run/experiment/trial_runner.h"
#include "run/report/html_report.h"

namespace recbole::experiment {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_files(const std::string& text) {
  std::vector<std::string> files;
  std::istringstream in(text);
  for (std::string f; std::getline(in, f, ',');) {
    f.erase(0, f.find_first_not_of(' '));
    f.erase(f.find_last_not_of(' ') + 1);
    if (!f.empty()) files.push_back(f);
  }
  return files;
}

// Mean and sample standard deviation (null with fewer than two values).
std::pair<nlohmann::json, nlohmann::json> mean_sd(const std::vector<double>& xs) {
  if (xs.empty()) return {nullptr, nullptr};
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  if (xs.size() < 2) return {mean, nullptr};
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return {mean, std::sqrt(ss / static_cast<double>(xs.size() - 1))};
}

std::string mean_sd_text(const nlohmann::json& mean, const nlohmann::json& sd, int decimals) {
  if (!mean.is_number()) return "-";
  std::string s = fixed(mean.get<double>(), decimals);
  if (sd.is_number()) s += " ± " + fixed(sd.get<double>(), decimals);
  return s;
}

std::string number_or_empty(const nlohmann::json& x) {
  return x.is_number() ? number_text(x.get<double>()) : "";
}

}  // namespace

std::vector<std::string> CompareConfigFiles::for_model(const std::string& model) const {
  std::vector<std::string> files = common;
  if (auto it = per_model.find(model); it != per_model.end())
    files.insert(files.end(), it->second.begin(), it->second.end());
  return files;
}

CompareConfigFiles parse_compare_config_files(const std::string& text,
                                              const std::vector<std::string>& models) {
  CompareConfigFiles out;
  std::istringstream in(text);
  for (std::string group; std::getline(in, group, ';');) {
    const size_t colon = group.find(':');
    const size_t comma = group.find(',');
    // "NAME:" before the first file names a model; a path with a colon in it would read as one,
    // hence the check against the models.
    if (colon != std::string::npos && (comma == std::string::npos || colon < comma)) {
      std::string model = group.substr(0, colon);
      model.erase(0, model.find_first_not_of(' '));
      if (std::find(models.begin(), models.end(), model) == models.end())
        throw ConfigError("--config_files: \"" + group + "\": \"" + model +
                          "\" is not one of --models (" + join(models, ",") +
                          "); expected MODEL:a.yaml,b.yaml for one model's files");
      std::vector<std::string> files = split_files(group.substr(colon + 1));
      auto& dest = out.per_model[model];
      dest.insert(dest.end(), files.begin(), files.end());
    } else {
      std::vector<std::string> files = split_files(group);
      out.common.insert(out.common.end(), files.begin(), files.end());
    }
  }
  return out;
}

void aggregate_comparison(nlohmann::json& comparison) {
  std::vector<std::string> metrics;
  for (const auto& m : comparison["models"])
    for (const auto& r : m["runs"])
      if (r["status"] == "ok")
        for (const auto& [k, v] : r["test_result"].items())
          if (std::find(metrics.begin(), metrics.end(), k) == metrics.end()) metrics.push_back(k);
  comparison["metrics"] = metrics;
  for (auto& m : comparison["models"]) {
    nlohmann::json mean = nlohmann::json::object(), sd = nlohmann::json::object();
    for (const std::string& metric : metrics) {
      std::vector<double> xs;
      for (const auto& r : m["runs"])
        if (r["status"] == "ok" && r["test_result"].contains(metric))
          xs.push_back(r["test_result"][metric].get<double>());
      auto [mu, s] = mean_sd(xs);
      mean[metric] = mu;
      sd[metric] = s;
    }
    std::vector<double> seconds;
    for (const auto& r : m["runs"])
      if (r["status"] == "ok") seconds.push_back(r["seconds"].get<double>());
    auto [mu, s] = mean_sd(seconds);
    m["mean"] = mean;
    m["sd"] = sd;
    m["seconds_mean"] = mu;
    m["seconds_sd"] = s;
  }
}

CompareResult run_comparison(const CompareOptions& o, std::ostream& out) {
  const fs::path dir(o.output_dir);
  fs::create_directories(dir / "runs");
  nlohmann::json doc = {{"dataset", o.dataset},
                        {"seeds", o.seeds},
                        {"metrics", nlohmann::json::array()},
                        {"models", nlohmann::json::array()}};
  for (const std::string& m : o.models)
    doc["models"].push_back({{"model", m}, {"runs", nlohmann::json::array()}});
  bool user_threads = false;
  for (const auto& [k, v] : o.overrides) user_threads = user_threads || k == "num_threads";

  // The runs, in order: each model's seeds in turn.
  std::vector<std::pair<size_t, size_t>> plan;  // (model index, seed index)
  for (size_t m = 0; m < o.models.size(); ++m)
    for (size_t s = 0; s < o.seeds.size(); ++s) plan.emplace_back(m, s);
  // Finished runs by plan index, so that each model's runs stay in seed order.
  std::vector<nlohmann::json> finished(plan.size());
  size_t next = 0, n_finished = 0;

  auto write_outputs = [&] {
    for (auto& m : doc["models"]) m["runs"] = nlohmann::json::array();
    for (size_t i = 0; i < plan.size(); ++i)
      if (!finished[i].is_null()) doc["models"][plan[i].first]["runs"].push_back(finished[i]);
    aggregate_comparison(doc);
    write_file_atomically((dir / "compare.json").string(), doc.dump(2) + "\n", "compare.json");
    write_file_atomically((dir / "compare.csv").string(), comparison_csv(doc), "compare.csv");
    write_file_atomically((dir / "report.html").string(), report::render_compare_report(doc),
                          "report.html");
  };

  out << "recbole_compare: " << o.models.size() << " model(s) x " << o.seeds.size()
      << " seed(s) on " << o.dataset << ", " << o.parallel << " at once, into " << o.output_dir
      << "\n"
      << std::flush;
  write_outputs();
  TrialRunner runner({o.recbole_run, o.parallel});
  const int sig = runner.run(
      [&]() -> std::optional<TrialJob> {
        if (next >= plan.size()) return std::nullopt;
        const auto [m, s] = plan[next];
        const std::string& model = o.models[m];
        const std::string stem = model + "-" + std::to_string(o.seeds[s]);
        TrialJob job;
        job.id = next++;
        job.result_file = (dir / "runs" / (stem + ".json")).string();
        job.log_file = (dir / "runs" / (stem + ".log")).string();
        job.args = {"--model=" + model, "--dataset=" + o.dataset};
        const std::vector<std::string> files = o.config_files.for_model(model);
        if (!files.empty()) job.args.push_back("--config_files=" + join(files, ","));
        for (const auto& [k, v] : o.overrides) job.args.push_back("--" + k + "=" + v);
        for (const auto& [k, v] : o.run_only) job.args.push_back("--" + k + "=" + v);
        job.args.push_back("--seed=" + std::to_string(o.seeds[s]));
        if (!user_threads && o.num_threads > 0)
          job.args.push_back("--num_threads=" + std::to_string(o.num_threads));
        job.args.push_back("--result_file=" + job.result_file);
        return job;
      },
      [&](const TrialJob& job, const TrialOutcome& outcome) {
        const auto [m, s] = plan[job.id];
        finished[job.id] = {{"seed", o.seeds[s]},
                            {"status", status_name(outcome.status)},
                            {"error", outcome.error},
                            {"test_result", outcome.test_result},
                            {"seconds", outcome.seconds}};
        ++n_finished;
        write_outputs();
        std::string line = "[" + std::to_string(n_finished) + "/" + std::to_string(plan.size()) +
                           "] " + o.models[m] + " seed " + std::to_string(o.seeds[s]) + " " +
                           status_name(outcome.status);
        if (!outcome.error.empty()) line += ": " + outcome.error;
        for (const auto& [k, v] : outcome.test_result.items())
          line += " " + k + "=" + fixed(v.get<double>(), 4);
        out << line << "  " << fixed(outcome.seconds, 1) << "s\n" << std::flush;
      });
  write_outputs();
  out << "\n" << comparison_table(doc) << std::flush;
  return {doc, sig};
}

std::string comparison_csv(const nlohmann::json& c) {
  std::vector<std::string> header = {"model", "runs_ok"};
  for (const auto& m : c["metrics"]) {
    header.push_back(m.get<std::string>() + "_mean");
    header.push_back(m.get<std::string>() + "_sd");
  }
  header.push_back("seconds_mean");
  header.push_back("seconds_sd");
  std::string csv = csv_row(header);
  for (const auto& m : c["models"]) {
    size_t ok = 0;
    for (const auto& r : m["runs"]) ok += r["status"] == "ok" ? 1 : 0;
    std::vector<std::string> row = {m["model"].get<std::string>(), std::to_string(ok)};
    for (const auto& metric : c["metrics"]) {
      const std::string k = metric.get<std::string>();
      row.push_back(number_or_empty(m["mean"].value(k, nlohmann::json())));
      row.push_back(number_or_empty(m["sd"].value(k, nlohmann::json())));
    }
    row.push_back(number_or_empty(m["seconds_mean"]));
    row.push_back(number_or_empty(m["seconds_sd"]));
    csv += csv_row(row);
  }
  return csv;
}

std::string comparison_table(const nlohmann::json& c) {
  std::vector<std::string> header = {"model", "runs"};
  for (const auto& m : c["metrics"]) header.push_back(m.get<std::string>());
  header.push_back("seconds/run");
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : c["models"]) {
    size_t ok = 0;
    for (const auto& r : m["runs"]) ok += r["status"] == "ok" ? 1 : 0;
    std::vector<std::string> row = {m["model"].get<std::string>(),
                                    std::to_string(ok) + "/" + std::to_string(m["runs"].size())};
    for (const auto& metric : c["metrics"]) {
      const std::string k = metric.get<std::string>();
      row.push_back(mean_sd_text(m["mean"].value(k, nlohmann::json()),
                                 m["sd"].value(k, nlohmann::json()), 4));
    }
    row.push_back(mean_sd_text(m["seconds_mean"], m["seconds_sd"], 2));
    rows.push_back(row);
  }
  return text_table(header, rows);
}

}  // namespace recbole::experiment

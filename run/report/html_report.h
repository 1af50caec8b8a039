#pragma once
// HTML reports of a run, a hyperparameter search and a model comparison. Each function returns
// one self-contained HTML file: inline CSS and SVG charts (svg_chart.h), no script, nothing
// fetched from the network. The page is the template of run/report/templates/ (compiled
// into the library) filled in from the JSON document; every text is HTML-escaped. Missing or
// empty parts (no validation, one epoch, failed trials, null scores) show "no data" or are left
// out; a field of an unexpected type reads as missing. Throws recbole::Error when the document
// is not a JSON object.
#include <string>

#include <nlohmann/json.hpp>

namespace recbole::report {

// A run: RunResult::to_json() (recbole_run --result_file), with "config" (key, value, source)
// and "dataset_stats". Shows the model and dataset, the training-loss and validation curves per
// epoch with the best epoch marked, the best-valid and test results, timing, peak RSS, whether
// the run was interrupted, the dataset statistics and the effective configuration.
std::string render_run_report(const nlohmann::json& run_result);

// A search (recbole_hyper's trials.json): its settings and parameters, the best trial, the
// score against each parameter (one scatter plot each; a log axis for loguniform ones) and the
// table of trials, failed ones with their error.
std::string render_search_report(const nlohmann::json& search);

// A comparison (recbole_compare's compare.json): one bar chart per test metric (mean, with the
// standard deviation as error bars), the table of mean ± sd and seconds per run, and each run.
std::string render_compare_report(const nlohmann::json& comparison);

}  // namespace recbole::report

#include "run/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include <kainjow/mustache.hpp>

#include "recbole/utils/error.h"
#include "recbole/utils/text.h"
#include "run/report/svg_chart.h"
#include "run/report/templates.h"

namespace recbole::report {

using nlohmann::json;
namespace mustache = kainjow::mustache;

std::string template_text(const std::string& name) {
  for (const auto& [file, text] : embedded_templates())
    if (name == file) return text;
  throw Error("report template \"" + name + "\" is not compiled into the library");
}

namespace {

constexpr const char* kMissing = "\xE2\x80\x94";  // an em dash: no value

// Reading the documents: a missing field, or one of another type, is "no value" (the reports
// show what there is rather than refuse a document of an older or newer writer).
const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::optional<double> number(const json* j) {
  if (!j || !j->is_number()) return std::nullopt;
  return j->get<double>();
}

std::optional<double> number(const json& j, const char* key) { return number(field(j, key)); }

std::string text(const json& j, const char* key, const std::string& otherwise = "") {
  const json* v = field(j, key);
  return v && v->is_string() ? v->get<std::string>() : otherwise;
}

bool flag(const json& j, const char* key) {
  const json* v = field(j, key);
  return v && v->is_boolean() && v->get<bool>();
}

const json& list(const json& j, const char* key) {
  static const json empty = json::array();
  const json* v = field(j, key);
  return v && v->is_array() ? *v : empty;
}

const json& object(const json& j, const char* key) {
  static const json empty = json::object();
  const json* v = field(j, key);
  return v && v->is_object() ? *v : empty;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string metric_text(std::optional<double> v) {
  return v && std::isfinite(*v) ? format("%.4f", *v) : kMissing;
}

std::string seconds_text(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return kMissing;
  return format(*v < 1 ? "%.3f s" : *v < 10 ? "%.2f s" : "%.1f s", *v);
}

// A value of any JSON type as a table shows it: strings as they are, whole numbers without a
// fraction, others with 4 significant digits.
std::string value_text(const json* j) {
  if (!j || j->is_null()) return kMissing;
  if (j->is_string()) return j->get<std::string>();
  if (j->is_number_integer() || j->is_number_unsigned()) return j->dump();
  if (j->is_number_float()) {
    const double v = j->get<double>();
    if (!std::isfinite(v)) return kMissing;
    if (v == std::floor(v) && std::fabs(v) < 1e9) return format("%.0f", v);
    return format("%.4g", v);
  }
  return j->dump();
}

// The view models below are JSON; this turns one into the template engine's data. Numbers are
// formatted by the view already; null is false, so that a section of it is skipped.
mustache::data to_data(const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      mustache::data d = mustache::data::type::object;
      for (const auto& [k, v] : j.items()) d.set(k, to_data(v));
      return d;
    }
    case json::value_t::array: {
      mustache::data d = mustache::data::type::list;
      for (const auto& v : j) d.push_back(to_data(v));
      return d;
    }
    case json::value_t::string:
      return mustache::data(j.get<std::string>());
    case json::value_t::boolean:
      return mustache::data(j.get<bool>());
    case json::value_t::null:
      return mustache::data(false);
    default:
      return mustache::data(value_text(&j));
  }
}

// The page `name` filled in from `view`; the style sheet is the partial {{> style}}.
std::string render(const std::string& name, const json& view) {
  mustache::mustache page(template_text(name));
  if (!page.is_valid()) throw Error("report template " + name + ": " + page.error_message());
  mustache::data data = to_data(view);
  data.set("style", mustache::partial([] { return template_text("style.css"); }));
  std::string html = page.render(data);
  if (!page.is_valid()) throw Error("report template " + name + ": " + page.error_message());
  return html;
}

json row(const std::string& label, const std::string& value) {
  return {{"label", label}, {"value", value}};
}

void require_object(const json& j, const char* what) {
  if (!j.is_object())
    throw Error(std::string("report: expected ") + what + " as a JSON object, got " +
                j.type_name());
}

// --- the run -----------------------------------------------------------------------------

std::string config_value(const json& run, const std::string& key) {
  for (const json& e : list(run, "config"))
    if (text(e, "key") == key) return text(e, "value");
  return "";
}

json run_view(const json& run) {
  json v;
  const std::string model = text(run, "model", "?"), dataset = text(run, "dataset", "?");
  v["title"] = model + " on " + dataset;
  v["model"] = model;
  v["dataset"] = dataset;
  const json& history = list(run, "history");
  const std::optional<double> best_epoch = number(run, "best_epoch");
  const bool has_best = best_epoch && *best_epoch >= 0;
  std::string valid_metric = to_lower(config_value(run, "valid_metric"));
  const std::string score_name = valid_metric.empty() ? "valid score" : valid_metric;

  if (flag(run, "interrupted")) {
    std::string note = "Interrupted";
    if (!text(run, "stop_signal").empty()) note += " by " + text(run, "stop_signal");
    note += " after " + value_text(field(run, "epochs_run")) + " epoch(s); no test was run.";
    if (!text(run, "resume_checkpoint").empty())
      note += " Resume with --resume=" + text(run, "resume_checkpoint");
    v["interrupted"] = note;
  }

  json summary = json::array();
  summary.push_back(row("epochs run", value_text(field(run, "epochs_run"))));
  summary.push_back(row("best epoch", has_best ? format("%.0f", *best_epoch) : kMissing));
  summary.push_back(row("best " + score_name, metric_text(number(run, "best_valid_score"))));
  summary.push_back(row("total time", seconds_text(number(object(run, "timing"), "total_s"))));
  const std::optional<double> rss = number(run, "peak_rss_mb");
  summary.push_back(row("peak RSS", rss ? format("%.0f MB", *rss) : kMissing));
  v["summary"] = summary;

  // The curves: the training loss at every epoch, each validation metric where it was computed.
  Series loss{"train loss", {}, {}};
  std::vector<Series> valid;
  std::map<std::string, size_t> valid_index;
  for (const json& e : history) {
    const std::optional<double> epoch = number(e, "epoch");
    if (!epoch) continue;
    if (const auto l = number(e, "train_loss")) loss.x.push_back(*epoch), loss.y.push_back(*l);
    for (const auto& [metric, value] : object(e, "valid_result").items()) {
      if (!value.is_number()) continue;
      auto [it, added] = valid_index.emplace(metric, valid.size());
      if (added) valid.push_back({metric, {}, {}});
      valid[it->second].x.push_back(*epoch);
      valid[it->second].y.push_back(value.get<double>());
    }
  }
  LineChart loss_chart{"Training loss", "epoch", "loss", {loss}, std::nullopt, "", true};
  LineChart valid_chart{"Validation metrics", "epoch", "value", valid, std::nullopt, "", true};
  if (has_best) {
    const std::string label = "best epoch " + format("%.0f", *best_epoch);
    loss_chart.marker_x = valid_chart.marker_x = *best_epoch;
    loss_chart.marker_label = valid_chart.marker_label = label;
  }
  v["charts"] =
      json::array({{{"svg", line_chart(loss_chart)}}, {{"svg", line_chart(valid_chart)}}});
  if (history.empty())
    v["history_note"] =
        "No per-epoch history: the model is fitted once, or the run stopped before an epoch "
        "ended.";
  else if (valid.empty())
    v["history_note"] = "No validation during training (an empty valid split, or eval_step 0).";

  // Best valid and test side by side (JSON objects keep no order: by name).
  const json& best = object(run, "best_valid_result");
  const json& test = object(run, "test_result");
  std::vector<std::string> metrics;
  for (const json* part : {&best, &test})
    for (const auto& [k, value] : part->items())
      if (std::find(metrics.begin(), metrics.end(), k) == metrics.end()) metrics.push_back(k);
  json results = json::array();
  for (const std::string& m : metrics)
    results.push_back({{"metric", m},
                       {"valid", metric_text(number(field(best, m.c_str())))},
                       {"test", metric_text(number(field(test, m.c_str())))},
                       {"is_valid_metric", m == valid_metric}});
  v["results"] = results;

  const json& timing = object(run, "timing");
  // A model fitted once has no epochs: its training time is the fit's.
  const bool fitted_once = history.empty() && number(run, "epochs_run") == 1.0;
  v["timing"] = json::array(
      {row("data (load, filter, split)", seconds_text(number(timing, "data_s"))),
       row(fitted_once ? "fit" : "training, per epoch",
           seconds_text(number(timing, "train_s_per_epoch"))),
       row("evaluation, per validation", seconds_text(number(timing, "eval_s_per_epoch"))),
       row("total", seconds_text(number(timing, "total_s"))),
       row("peak RSS", rss ? format("%.1f MB", *rss) : kMissing)});

  const json& stats = object(run, "dataset_stats");
  json stat_rows = json::array();
  const std::pair<const char*, const char*> stat_names[] = {{"n_users", "users"},
                                                            {"n_items", "items"},
                                                            {"n_interactions", "interactions"},
                                                            {"sparsity", "sparsity"},
                                                            {"train", "train interactions"},
                                                            {"valid", "valid interactions"},
                                                            {"test", "test interactions"}};
  for (const auto& [key, label] : stat_names) {
    const json* s = field(stats, key);
    if (!s) continue;
    const std::optional<double> n = number(s);
    stat_rows.push_back(row(
        label, std::string(key) == "sparsity" && n ? format("%.4f%%", 100 * *n) : value_text(s)));
  }
  v["dataset_stats"] = stat_rows;

  // The configuration, in the sections the log prints.
  json sections = json::array();
  std::map<std::string, size_t> section_index;
  for (const json& e : list(run, "config")) {
    const std::string section = text(e, "section", "Configuration");
    auto [it, added] = section_index.emplace(section, sections.size());
    if (added) sections.push_back({{"name", section}, {"entries", json::array()}});
    sections[it->second]["entries"].push_back({{"key", text(e, "key")},
                                               {"value", value_text(field(e, "value"))},
                                               {"source", text(e, "source")}});
  }
  v["config_sections"] = sections;
  v["has_config"] = !sections.empty();
  return v;
}

// --- the search --------------------------------------------------------------------------

// How a parameter's range reads: "choice of 32, 64, 128", "loguniform(-8, 0)".
std::string range_text(const json& p) {
  const std::string kind = text(p, "kind", "?");
  std::string out;
  const json& values = list(p, "values");
  if (!values.empty()) {
    for (const json& x : values) out += (out.empty() ? "" : ", ") + value_text(&x);
    return "{" + out + "}";
  }
  const json& args = list(p, "args");
  for (const json& x : args) out += (out.empty() ? "" : ", ") + value_text(&x);
  out = kind + "(" + out + ")";
  // The bounds of a loguniform parameter are natural logs (hyperopt's and RecBole's convention).
  if (kind == "loguniform" && args.size() == 2 && args[0].is_number() && args[1].is_number())
    out += ": " + format("%.3g", std::exp(args[0].get<double>())) + " to " +
           format("%.3g", std::exp(args[1].get<double>()));
  return out;
}

json search_view(const json& search) {
  json v;
  const std::string model = text(search, "model", "?"), dataset = text(search, "dataset", "?");
  const std::string metric = text(search, "valid_metric", "valid score");
  const json& trials = list(search, "trials");
  const json& params = list(search, "params");
  v["title"] = "Hyperparameter search: " + model + " on " + dataset;
  const std::optional<double> best_id = number(search, "best_trial");

  size_t ok = 0, failed = 0, interrupted = 0;
  for (const json& t : trials) {
    const std::string status = text(t, "status");
    ok += status == "ok", failed += status == "failed", interrupted += status == "interrupted";
  }
  const json* bigger = field(search, "valid_metric_bigger");
  v["settings"] = json::array(
      {row("model", model), row("dataset", dataset),
       row("algorithm", text(search, "algo", kMissing)),
       row("valid metric",
           metric + (bigger && bigger->is_boolean()
                         ? (bigger->get<bool>() ? " (higher is better)" : " (lower is better)")
                         : "")),
       row("trials", std::to_string(trials.size()) + " (" + std::to_string(ok) + " ok, " +
                         std::to_string(failed) + " failed" +
                         (interrupted ? ", " + std::to_string(interrupted) + " interrupted" : "") +
                         ")"),
       row("max evals", value_text(field(search, "max_evals"))),
       row("parallel", value_text(field(search, "parallel"))),
       row("started", text(search, "started", kMissing)),
       row("time", seconds_text(number(search, "seconds"))),
       row("interrupted", flag(search, "interrupted") ? "yes" : "no")});
  if (flag(search, "interrupted"))
    v["interrupted"] = "The search was interrupted: the trials below are those that ended.";

  json param_rows = json::array();
  std::vector<std::string> names;
  for (const json& p : params) {
    names.push_back(text(p, "name", "?"));
    param_rows.push_back(
        {{"name", names.back()}, {"kind", text(p, "kind", "?")}, {"range", range_text(p)}});
  }
  // Parameters a trial has that the settings do not list still get a column.
  for (const json& t : trials)
    for (const auto& [k, value] : object(t, "params").items())
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  v["params"] = param_rows;

  // Test metrics: the union over the trials, in the order first seen.
  std::vector<std::string> test_metrics;
  for (const json& t : trials)
    for (const auto& [k, value] : object(t, "test_result").items())
      if (std::find(test_metrics.begin(), test_metrics.end(), k) == test_metrics.end())
        test_metrics.push_back(k);

  json rows = json::array();
  const json* best_trial = nullptr;
  std::vector<double> scores;
  for (const json& t : trials) {
    const std::optional<double> id = number(t, "id");
    const bool is_best = best_id && id && *id == *best_id;
    if (is_best) best_trial = &t;
    const std::optional<double> score = number(t, "valid_score");
    scores.push_back(score ? *score : NAN);
    json cells = json::array();
    for (const std::string& n : names)
      cells.push_back({{"v", value_text(field(object(t, "params"), n.c_str()))}});
    json tests = json::array();
    for (const std::string& m : test_metrics)
      tests.push_back({{"v", metric_text(number(field(object(t, "test_result"), m.c_str())))}});
    const std::string status = text(t, "status", "?");
    rows.push_back({{"id", value_text(field(t, "id"))},
                    {"cells", cells},
                    {"status", status},
                    {"status_class", status == "ok" ? "ok" : "bad"},
                    {"valid_score", metric_text(score)},
                    {"tests", tests},
                    {"seconds", seconds_text(number(t, "seconds"))},
                    {"error", text(t, "error")},
                    {"best", is_best}});
  }
  json name_cells = json::array(), metric_cells = json::array();
  for (const std::string& n : names) name_cells.push_back({{"v", n}});
  for (const std::string& m : test_metrics) metric_cells.push_back({{"v", m}});
  v["param_names"] = name_cells;
  v["test_metrics"] = metric_cells;
  v["trials"] = rows;
  v["valid_metric"] = metric;

  if (best_trial) {
    json best_params = json::array(), best_tests = json::array();
    for (const auto& [k, value] : object(*best_trial, "params").items())
      best_params.push_back(row(k, value_text(&value)));
    for (const auto& [k, value] : object(*best_trial, "test_result").items())
      best_tests.push_back(row(k, metric_text(number(&value))));
    v["best"] = {{"id", value_text(field(*best_trial, "id"))},
                 {"params", best_params},
                 {"valid_score", metric_text(number(*best_trial, "valid_score"))},
                 {"tests", best_tests}};
  }

  // One scatter per parameter: the score of each trial against its value.
  json charts = json::array();
  for (size_t k = 0; k < names.size(); ++k) {
    const json* decl = nullptr;
    for (const json& p : params)
      if (text(p, "name") == names[k]) decl = &p;
    const std::string kind = decl ? text(*decl, "kind") : "";
    ScatterPlot plot;
    plot.title = metric + " against " + names[k];
    plot.x_label = names[k];
    plot.y_label = metric;
    plot.log_x = kind == "loguniform";
    bool numeric = kind != "choice";
    for (const json& t : trials) {
      const json* x = field(object(t, "params"), names[k].c_str());
      if (x && !x->is_number()) numeric = false;
    }
    if (!numeric) {
      // Categories: the declared values first, in their order, then any other a trial used.
      if (decl)
        for (const json& x : list(*decl, "values")) plot.categories.push_back(value_text(&x));
      for (const json& t : trials) {
        const std::string x = value_text(field(object(t, "params"), names[k].c_str()));
        if (std::find(plot.categories.begin(), plot.categories.end(), x) == plot.categories.end())
          plot.categories.push_back(x);
      }
    }
    for (size_t i = 0; i < trials.size(); ++i) {
      const json* x = field(object(trials[i], "params"), names[k].c_str());
      double px = NAN;
      if (numeric) {
        if (x && x->is_number()) px = x->get<double>();
      } else {
        const std::string label = value_text(x);
        px = static_cast<double>(std::find(plot.categories.begin(), plot.categories.end(), label) -
                                 plot.categories.begin());
      }
      if (best_id && number(trials[i], "id") == best_id) plot.highlight = plot.x.size();
      plot.x.push_back(px);
      plot.y.push_back(scores[i]);
    }
    charts.push_back({{"svg", scatter_plot(plot)}});
  }
  v["charts"] = charts;
  return v;
}

// --- the comparison ----------------------------------------------------------------------

json compare_view(const json& comparison) {
  json v;
  const std::string dataset = text(comparison, "dataset", "?");
  v["title"] = "Model comparison on " + dataset;
  const json& models = list(comparison, "models");
  std::vector<std::string> metrics;
  for (const json& m : list(comparison, "metrics"))
    if (m.is_string()) metrics.push_back(m.get<std::string>());
  // Without a list of metrics: those the models report.
  if (metrics.empty())
    for (const json& m : models)
      for (const auto& [k, value] : object(m, "mean").items())
        if (std::find(metrics.begin(), metrics.end(), k) == metrics.end()) metrics.push_back(k);

  std::string seeds;
  for (const json& s : list(comparison, "seeds"))
    seeds += (seeds.empty() ? "" : ", ") + value_text(&s);
  v["settings"] =
      json::array({row("dataset", dataset), row("seeds", seeds.empty() ? kMissing : seeds),
                   row("models", std::to_string(models.size())),
                   row("runs per model", std::to_string(list(comparison, "seeds").size()))});

  json charts = json::array();
  for (const std::string& metric : metrics) {
    BarChart chart{metric + " (test): mean \xC2\xB1 sd over seeds", metric, {}, 4};
    for (const json& m : models) {
      const std::optional<double> mean = number(field(object(m, "mean"), metric.c_str()));
      if (!mean) continue;
      chart.bars.push_back(
          {text(m, "model", "?"), *mean, number(field(object(m, "sd"), metric.c_str()))});
    }
    charts.push_back({{"svg", bar_chart(chart)}});
  }
  v["charts"] = charts;

  json metric_cells = json::array();
  for (const std::string& m : metrics) metric_cells.push_back({{"v", m}});
  v["metrics"] = metric_cells;
  auto mean_sd = [](std::optional<double> mean, std::optional<double> sd, bool seconds) {
    if (!mean) return std::string(kMissing);
    const char* fmt = seconds ? "%.2f" : "%.4f";
    return format(fmt, *mean) + (sd ? " \xC2\xB1 " + format(fmt, *sd) : "");
  };
  json rows = json::array(), runs = json::array();
  for (const json& m : models) {
    json cells = json::array();
    for (const std::string& metric : metrics)
      cells.push_back({{"v", mean_sd(number(field(object(m, "mean"), metric.c_str())),
                                     number(field(object(m, "sd"), metric.c_str())), false)}});
    size_t ok = 0;
    const json& model_runs = list(m, "runs");
    for (const json& r : model_runs) {
      ok += text(r, "status") == "ok";
      json run_cells = json::array();
      for (const std::string& metric : metrics)
        run_cells.push_back(
            {{"v", metric_text(number(field(object(r, "test_result"), metric.c_str())))}});
      const std::string status = text(r, "status", "?");
      runs.push_back({{"model", text(m, "model", "?")},
                      {"seed", value_text(field(r, "seed"))},
                      {"status", status},
                      {"status_class", status == "ok" ? "ok" : "bad"},
                      {"cells", run_cells},
                      {"seconds", seconds_text(number(r, "seconds"))},
                      {"error", text(r, "error")}});
    }
    rows.push_back(
        {{"model", text(m, "model", "?")},
         {"cells", cells},
         {"seconds", mean_sd(number(m, "seconds_mean"), number(m, "seconds_sd"), true)},
         {"runs", std::to_string(ok) + "/" + std::to_string(model_runs.size()) + " ok"}});
  }
  v["models"] = rows;
  v["runs"] = runs;
  return v;
}

}  // namespace

std::string render_run_report(const json& run_result) {
  require_object(run_result, "a run result");
  return render("run.html", run_view(run_result));
}

std::string render_search_report(const json& search) {
  require_object(search, "a search");
  return render("search.html", search_view(search));
}

std::string render_compare_report(const json& comparison) {
  require_object(comparison, "a comparison");
  return render("compare.html", compare_view(comparison));
}

}  // namespace recbole::report

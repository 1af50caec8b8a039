// recbole_compare --models=BPR,LightGCN,EASE --dataset=ml-100k --seeds=2020,2021,2022
//                 [--config_files=...] [--parallel=P] [--output_dir=DIR] [--key=value ...]
// Runs every model with every seed (recbole_run processes) and compares their test metrics as
// mean ± sd over the seeds (run/experiment/comparison.h).
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/config/yaml_scalar.h"
#include "recbole/utils/error.h"
#include "recbole/utils/process_exit.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/text.h"
#include "run/experiment/comparison.h"
#include "run/experiment/table_text.h"
#include "run/experiment/trial_runner.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_compare --models=A,B,... --dataset=NAME --seeds=S1,S2,... [options] "
    "[--key=value ...]\n\n"
    "Runs every model once per seed (each run a recbole_run process) and prints one table:\n"
    "a row per model, each test metric as mean ± sd over the seeds, and the seconds per run.\n\n"
    "  --models=A,B         the models to compare\n"
    "  --seeds=S1,S2        the seeds (default: 2020,2021,2022)\n"
    "  --config_files=F     config files: `a.yaml,b.yaml` for every model; groups separated by\n"
    "                       `;` and prefixed `MODEL:` apply to one model, after the common ones:\n"
    "                       --config_files='common.yaml;BPR:bpr.yaml;EASE:ease.yaml,more.yaml'\n"
    "  --parallel=P         P runs at once (default 1); each gets cores/P threads\n"
    "  --output_dir=DIR     default compare/<dataset>-<YYYYmmdd-HHMMSS>\n"
    "  --recbole_run=PATH   the recbole_run to start (default: the one beside this program,\n"
    "                       then PATH)\n"
    "  --key=value          given to every run\n"
    "  --version            print the version\n\n"
    "Writes DIR/compare.json, DIR/compare.csv, DIR/report.html (bar charts with the sd as\n"
    "error bars) and DIR/runs/<model>-<seed>.{json,log}.\n";

const std::vector<std::string> kToolKeys = {"models",   "seeds",      "config_files",
                                            "parallel", "output_dir", "recbole_run"};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recbole;
  try {
    if (tools::answer_help_or_version(argc, argv, "recbole_compare", kUsage)) exit_process(0);
    std::map<std::string, std::string> tv;
    config::ConfigSources sources = config::parse_command_line(argc, argv, kToolKeys, &tv);
    if (!sources.model.empty())
      throw ConfigError("--model: recbole_compare takes --models=A,B,...");
    for (const auto& [k, v] : sources.command_line)
      if (k == "seed") {
        throw ConfigError("--seed: recbole_compare takes --seeds=S1,S2,...");
      } else if (k == "result_file") {
        throw ConfigError(
            "--result_file: recbole_compare sets each run's own; the comparison "
            "goes to --output_dir");
      }

    experiment::CompareOptions o;
    o.models = split_list(tv["models"]);
    if (o.models.empty())
      throw ConfigError("--models: expected one or more model names, e.g. --models=BPR,EASE");
    const std::vector<std::string> seeds =
        split_list(tv.count("seeds") ? tv["seeds"] : "2020,2021,2022");
    for (const std::string& s : seeds) {
      const auto v = config::parse_int(s);
      if (!v || *v < 0)
        throw ConfigError("--seeds: expected integers >= 0 separated by commas, got \"" + s + "\"");
      o.seeds.push_back(*v);
    }
    if (o.seeds.empty()) throw ConfigError("--seeds: expected one or more seeds");
    o.config_files = experiment::parse_compare_config_files(tv["config_files"], o.models);
    o.overrides = sources.command_line;
    // Each model's configuration, checked once before any run starts.
    std::vector<config::Config> configs;
    for (const std::string& model : o.models) {
      models::find_model(model);
      config::ConfigSources s = sources;
      s.model = model;
      s.model_source = "--models";
      s.default_dataset = "ml-100k";
      s.config_files = o.config_files.for_model(model);
      configs.push_back(config::Config::build(s));
      o.dataset = configs.back().dataset();
    }
    std::vector<const config::Config*> all;
    bool default_threads = true;
    for (const config::Config& c : configs) {
      all.push_back(&c);
      default_threads = default_threads && experiment::from_defaults(c, "num_threads");
    }
    o.parallel = experiment::count_option(tv, "parallel", 1);
    o.num_threads = default_threads ? experiment::threads_per_trial(o.parallel) : 0;
    o.recbole_run = experiment::find_recbole_run(tv.count("recbole_run") ? tv["recbole_run"] : "");
    o.output_dir = tv.count("output_dir") && !tv["output_dir"].empty()
                       ? tv["output_dir"]
                       : experiment::default_output_dir("compare", o.dataset);
    experiment::prepare_output_dir(o.output_dir, "--output_dir");
    o.run_only = experiment::outputs_inside(all, o.output_dir);

    install_stop_handlers();
    const experiment::CompareResult r = experiment::run_comparison(o, std::cout);
    if (r.stop_signal) {
      std::cerr << "recbole_compare: stopped by " << signal_name(r.stop_signal)
                << "; the finished runs are in " << o.output_dir << "\n";
      exit_process(stop_exit_code(r.stop_signal));
    }
    std::vector<std::string> failed;
    for (const auto& m : r.comparison["models"])
      for (const auto& run : m["runs"])
        if (run["status"] != "ok")
          failed.push_back(m["model"].get<std::string>() + " seed " +
                           std::to_string(run["seed"].get<int64_t>()));
    if (!failed.empty()) {
      std::cerr << "recbole_compare: " << failed.size() << " run(s) failed: " << join(failed, ", ")
                << "; see " << o.output_dir << "/runs/<model>-<seed>.log\n";
      exit_process(1);
    }
    exit_process(0);
  } catch (const Error& e) {
    std::cerr << "recbole_compare: error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "recbole_compare: internal error: " << e.what() << "\n";
  }
  exit_process(1);
}

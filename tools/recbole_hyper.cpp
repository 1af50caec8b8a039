// recbole_hyper --model=M --dataset=D --params_file=hyper.test [--algo=exhaustive|random|bayes]
//               [--max_evals=N] [--parallel=P] [--output_dir=DIR] [--key=value ...]
// A hyper-parameter search: each trial is a recbole_run process (run/experiment/).
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/process_exit.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/text.h"
#include "run/experiment/hyper_search.h"
#include "run/experiment/search.h"
#include "run/experiment/trial_runner.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_hyper --model=NAME --dataset=NAME --params_file=FILE [options] "
    "[--key=value ...]\n\n"
    "Searches hyper-parameters: each trial is a recbole_run process with the trial's values.\n\n"
    "  --params_file=FILE   the search space, one parameter per line (RecBole's format):\n"
    "                         learning_rate loguniform -8,0\n"
    "                         embedding_size choice [32,64,128]\n"
    "                         dropout_prob uniform 0,0.5\n"
    "                         n_layers quniform 1,4,1\n"
    "  --algo=A             exhaustive (every combination of choices; default), random, or\n"
    "                       bayes (tree-structured Parzen estimator, as hyperopt's TPE)\n"
    "  --max_evals=N        at most N trials (default 100; exhaustive: the grid, if smaller)\n"
    "  --parallel=P         P trials at once (default 1); each gets cores/P threads\n"
    "  --seed=S             the seed of the search and of every trial (default: the config's)\n"
    "  --output_dir=DIR     default hyper/<model>-<dataset>-<YYYYmmdd-HHMMSS>\n"
    "  --recbole_run=PATH   the recbole_run to start (default: the one beside this program,\n"
    "                       then PATH)\n"
    "  --config_files=a.yaml,b.yaml and any --key=value: given to every trial\n"
    "  --version            print the version\n\n"
    "Writes DIR/trials.json, DIR/trials.csv, DIR/best.yaml (the best trial's values, for\n"
    "--config_files), DIR/report.html (score against each parameter, the trials) and\n"
    "DIR/trials/<id>.{json,log}. SIGINT/SIGTERM stop the running trials\n"
    "cleanly and keep every finished one.\n";

const std::vector<std::string> kToolKeys = {"params_file", "algo",       "max_evals",
                                            "parallel",    "output_dir", "recbole_run"};

}  // namespace

int main(int argc, char** argv) {
  using namespace recbole;
  try {
    if (tools::answer_help_or_version(argc, argv, "recbole_hyper", kUsage)) exit_process(0);
    std::map<std::string, std::string> tv;
    config::ConfigSources sources = config::parse_command_line(argc, argv, kToolKeys, &tv);
    sources.default_model = "BPR";
    sources.default_dataset = "ml-100k";
    // What every trial gets, checked once before any trial starts.
    const config::Config config = config::Config::build(sources);
    models::find_model(config.model());
    if (!tv.count("params_file"))
      throw ConfigError(
          "--params_file: expected the search space's file, e.g. "
          "--params_file=hyper.test (see --help)");

    experiment::HyperSearchOptions o;
    o.model = config.model();
    o.dataset = config.dataset();
    o.config_files = sources.config_files;
    o.overrides = sources.command_line;
    for (const auto& [k, v] : o.overrides)
      if (k == "result_file")
        throw ConfigError(
            "--result_file: recbole_hyper sets each trial's own; the search's "
            "results go to --output_dir");
    o.params_file = tv["params_file"];
    o.space = experiment::read_search_space(o.params_file, experiment::config_key_check(o.model));
    for (const experiment::Parameter& p : o.space.params)
      for (const auto& [k, v] : o.overrides)
        if (k == p.name)
          throw ConfigError(p.where + ": " + p.name + " is searched and also given as --" + k +
                            "=" + v + "; expected one or the other");
    o.algo = tv.count("algo") ? tv["algo"] : "exhaustive";
    o.max_evals = experiment::count_option(tv, "max_evals", 100);
    o.parallel = experiment::count_option(tv, "parallel", 1);
    o.seed = static_cast<uint64_t>(config.get_int("seed"));
    experiment::make_search(o.algo, o.space, o.seed, o.max_evals);  // checks --algo
    o.valid_metric = to_lower(config.get_string("valid_metric"));
    o.valid_metric_bigger = config.get_bool("valid_metric_bigger");
    o.num_threads = experiment::from_defaults(config, "num_threads")
                        ? experiment::threads_per_trial(o.parallel)
                        : 0;
    o.recbole_run = experiment::find_recbole_run(tv.count("recbole_run") ? tv["recbole_run"] : "");
    o.output_dir = tv.count("output_dir") && !tv["output_dir"].empty()
                       ? tv["output_dir"]
                       : experiment::default_output_dir("hyper", o.model + "-" + o.dataset);
    experiment::prepare_output_dir(o.output_dir, "--output_dir");
    o.trial_only = experiment::outputs_inside({&config}, o.output_dir);

    install_stop_handlers();
    const experiment::HyperSearchResult r = experiment::run_hyper_search(o, std::cout);
    if (r.stop_signal) {
      std::cerr << "recbole_hyper: stopped by " << signal_name(r.stop_signal)
                << "; the finished trials are in " << o.output_dir << "\n";
      exit_process(stop_exit_code(r.stop_signal));
    }
    exit_process(r.search["best_trial"].is_null() ? 1 : 0);
  } catch (const Error& e) {
    std::cerr << "recbole_hyper: error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "recbole_hyper: internal error: " << e.what() << "\n";
  }
  exit_process(1);
}

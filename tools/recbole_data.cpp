// recbole_data: loads, preprocesses and splits a dataset exactly as RecBole would, and prints
// RecBole's statistics and the split sizes.
//
//   recbole_data --dataset=NAME [--data_path=DIR] [--config_files=a.yaml,b.yaml] [--key=value ...]
//                [--dump_split=OUTDIR] [--verbose=true]
//
// --dump_split writes OUTDIR/NAME.{train,valid,test}.inter (original tokens), loadable back with
// benchmark_filename: [train, valid, test]. --verbose also prints the effective configuration.
#include <iostream>
#include <map>
#include <string>

#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/data/dataset.h"
#include "recbole/data/dataset_location.h"
#include "recbole/data/dataset_options.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/thread_pool.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_data --dataset=NAME [--data_path=DIR] [--config_files=a.yaml,b.yaml] "
    "[--key=value ...]\n"
    "                    [--dump_split=OUTDIR] [--verbose=true]\n\n"
    "Loads, preprocesses and splits a dataset as RecBole does; prints its statistics and the\n"
    "split sizes. A dataset missing from data_path is read from a copy shipped with recbole-cpp\n"
    "(ml-100k), else downloaded by name or from download_url, as recbole_run does.\n\n"
    "  --dump_split=OUTDIR  write OUTDIR/NAME.{train,valid,test}.inter (original tokens)\n"
    "  --verbose=true       also print the effective configuration\n"
    "  --version            print the version\n"
    "Config keys: see recbole_run --help.\n";

void print_first_tokens(const recbole::data::Dataset& ds) {
  auto line = [](const char* what, int64_t n, auto token_of) {
    std::cout << "First remapped " << what << " tokens (ids 1..):";
    for (int32_t id = 1; id < n && id <= 10; ++id) std::cout << " " << token_of(id);
    std::cout << "\n";
  };
  line("user", ds.n_users(), [&](int32_t id) { return ds.user_token(id); });
  line("item", ds.n_items(), [&](int32_t id) { return ds.item_token(id); });
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recbole;
  if (tools::answer_help_or_version(argc, argv, "recbole_data", kUsage)) return 0;
  try {
    std::map<std::string, std::string> tool_values;
    const config::ConfigSources sources =
        config::parse_command_line(argc, argv, {"dump_split", "verbose"}, &tool_values);
    const config::Config config = config::Config::build(sources);
    // The data pipeline's parallel passes run on the ThreadPool (key num_threads), which the
    // device manager sizes in a full run; these tools build no device manager.
    ThreadPool::instance().set_threads(resolve_num_threads(config.get_int("num_threads")));
    if (config.has("state") && !config.is_null("state")) {
      log::set_level(log::parse_level(config.get_string("state")));
    }
    bool verbose = false;
    if (tool_values.count("verbose")) {
      const auto v = config::parse_bool(tool_values["verbose"]);
      if (!v)
        throw ConfigError("command line --verbose: expected true or false, got \"" +
                          tool_values["verbose"] + "\"");
      verbose = *v;
    }
    if (verbose) std::cout << config.dump() << "\n";
    if (config.dataset().empty()) throw ConfigError("command line: --dataset=NAME is required");
    // As recbole_run: the copy in data_path, else a shipped copy, else a download.
    data::ensure_dataset(config);
    const data::DatasetOptions options = data::DatasetOptions::from_config(config);

    const data::Dataset dataset = data::Dataset::load(options);
    std::cout << dataset.summary() << "\n";
    print_first_tokens(dataset);

    const data::SplitDataset split = data::split_dataset(dataset, options);
    std::cout << "Split sizes (train / valid / test): " << split.train.size() << " / "
              << split.valid.size() << " / " << split.test.size() << "\n";
    auto it = tool_values.find("dump_split");
    if (it != tool_values.end()) {
      data::dump_split(dataset, split, it->second);
      std::cout << "Split written to " << it->second << "/" << dataset.name()
                << ".{train,valid,test}.inter\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "recbole_data: error: " << e.what() << "\n";
    return 1;
  }
}

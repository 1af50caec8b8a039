// bench_scale: one row of the scale table in docs/benchmarks.md for one dataset — data load +
// preprocess + split, one BPR training epoch, one full evaluation, peak RSS — printed as a table
// row and optionally written as JSON (through a temporary file and a rename).
//
//   bench_scale --dataset=syn20m --data_path=DIR [--epochs=2] [--json=PATH] [--key=value ...]
//
// It runs the ordinary pipeline (recbole::run) with `epochs` epochs, a validation after each,
// and the test; the training time is the mean over the epochs, the evaluation time the mean over
// the validations. Any config key can be given (e.g. --learner=sparse_adam, --num_threads=1).
// Generate synthetic data with gen_synthetic.
#include <sys/utsname.h>

#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cpu_info.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "run/run_recbole.h"
#include "tool_flags.h"

namespace {

std::string cpu_model() {
  const std::string model_name = recbole::tools::cpu_info_field("model name");
  return model_name.empty() ? "unknown" : model_name;
}

double mem_total_gib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kib;
      break;
    }
    in.ignore(1 << 10, '\n');
  }
  return kib / (1024.0 * 1024.0);
}

constexpr const char* kUsage =
    "usage: bench_scale --dataset=NAME --data_path=DIR [--epochs=2] [--json=PATH] "
    "[--key=value ...]\n\n"
    "One row of the scale table (docs/benchmarks.md): data load + preprocess + split, one BPR\n"
    "training epoch (the mean over --epochs), one full evaluation, peak RSS; as a table row and,\n"
    "with --json, as JSON. Any config key can be given. gen_synthetic makes large datasets.\n"
    "  --version  print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "bench_scale", kUsage)) return 0;
  try {
    std::map<std::string, std::string> tool;
    recbole::config::ConfigSources sources =
        recbole::config::parse_command_line(argc, argv, {"epochs", "json"}, &tool);
    sources.default_model = "BPR";
    sources.default_dataset = "ml-100k";
    const std::string epochs = tool.count("epochs") ? tool["epochs"] : "1";
    for (auto [k, v] : std::map<std::string, std::string>{{"epochs", epochs},
                                                          {"eval_step", "1"},
                                                          {"show_progress", "false"},
                                                          {"state", "WARNING"}})
      sources.command_line.emplace_back(k, v);
    const recbole::config::Config config = recbole::config::Config::build(sources);
    const recbole::RunResult r = recbole::run(config);

    std::printf("%-12s %14s %14s %16s %12s\n", "dataset", "load+split_s", "bpr_epoch_s",
                "full_eval_s", "peak_rss_mb");
    std::printf("%-12s %14.3f %14.4f %16.4f %12.0f\n", r.dataset.c_str(), r.timing.data_s,
                r.timing.train_s_per_epoch, r.timing.eval_s_per_epoch, r.peak_rss_mb);
    if (tool.count("json")) {
      utsname un{};
      uname(&un);
      nlohmann::json j = r.to_json();
      j["benchmark"] = {{"load_split_s", r.timing.data_s},
                        {"bpr_epoch_s", r.timing.train_s_per_epoch},
                        {"full_eval_s", r.timing.eval_s_per_epoch},
                        {"peak_rss_mb", r.peak_rss_mb},
                        {"learner", config.get_string("learner")},
                        {"num_threads", config.get_int("num_threads")}};
      j["machine"] = {{"cpu", cpu_model()},
                      {"hardware_threads", std::thread::hardware_concurrency()},
                      {"mem_gib", mem_total_gib()},
                      {"kernel", std::string(un.release)}};
      recbole::write_file_atomically(tool["json"], j.dump(2) + "\n");
    }
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "bench_scale: error: " << e.what() << "\n";
    return 1;
  }
}

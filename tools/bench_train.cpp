// bench_train [--repeat=N] [recbole_run arguments...]
// Runs the same experiment N times in one process and prints, per run and as medians, the data
// time, training seconds per epoch, seconds per full evaluation, total time and peak RSS.
//   bench_train --repeat=3 --model=BPR --dataset=ml-100k --data_path=../shared/datasets
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "run/run_recbole.h"
#include "tool_flags.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

constexpr const char* kUsage =
    "usage: bench_train [--repeat=N] [recbole_run arguments...]\n\n"
    "Runs the same experiment N times (default 3) in one process and prints, per run and as\n"
    "medians, the data time, train s/epoch, s per full evaluation, total time and peak RSS.\n"
    "  --version  print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "bench_train", kUsage)) return 0;
  try {
    std::map<std::string, std::string> tool;
    recbole::config::ConfigSources sources =
        recbole::config::parse_command_line(argc, argv, {"repeat"}, &tool);
    const int repeat = tool.count("repeat") ? std::stoi(tool["repeat"]) : 3;
    sources.default_model = "BPR";
    sources.default_dataset = "ml-100k";
    sources.command_line.emplace_back("show_progress", "false");
    sources.command_line.emplace_back("state", "WARNING");
    std::vector<double> data, train, eval, total, rss, epochs;
    std::printf("%-4s %10s %14s %14s %10s %8s %10s\n", "run", "data_s", "train_s/epoch",
                "eval_s/epoch", "total_s", "epochs", "rss_mb");
    for (int r = 0; r < repeat; ++r) {
      recbole::config::Config config = recbole::config::Config::build(sources);
      recbole::RunResult res = recbole::run(config);
      data.push_back(res.timing.data_s);
      train.push_back(res.timing.train_s_per_epoch);
      eval.push_back(res.timing.eval_s_per_epoch);
      total.push_back(res.timing.total_s);
      rss.push_back(res.peak_rss_mb);
      epochs.push_back(static_cast<double>(res.epochs_run));
      std::printf("%-4d %10.4f %14.5f %14.5f %10.3f %8lld %10.1f\n", r, data.back(), train.back(),
                  eval.back(), total.back(), static_cast<long long>(res.epochs_run), rss.back());
    }
    std::printf("%-4s %10.4f %14.5f %14.5f %10.3f %8.0f %10.1f\n", "med", median(data),
                median(train), median(eval), median(total), median(epochs), median(rss));
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "bench_train: error: " << e.what() << "\n";
    return 1;
  }
}

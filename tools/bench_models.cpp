// bench_models [--models=A,B,...] [--repeat=N] [--run=PATH] [recbole_run arguments...]
// Runs recbole_run once per model and repeat, each as a whole process, and prints one Markdown
// table (for docs/benchmarks.md): per model the medians over the repeats of the whole-process
// wall time, training seconds per epoch, seconds per evaluation, epochs run, peak RSS, and the
// test ndcg@10. Models default to every registered general model except the fitted-once ones.
//   bench_models --models=BPR,LightGCN --repeat=3 --dataset=ml-100k --data_path=../shared/datasets
// Runs of the same model alternate with the others' (model A, B, A, B, ...), so that a drift of
// the machine's speed spreads over all models rather than landing on one.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "recbole/utils/error.h"
#include "tool_flags.h"

namespace {

struct Sample {
  double wall_s = 0, train_s = 0, eval_s = 0, epochs = 0, rss_mb = 0, ndcg = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// recbole_run next to this executable.
std::string default_runner() {
  const std::filesystem::path self = std::filesystem::canonical("/proc/self/exe");
  return (self.parent_path() / "recbole_run").string();
}

// One whole process: wall time from fork to exit, peak RSS from the kernel (children's rusage),
// the rest from the result file.
Sample run_once(const std::string& runner, const std::string& model,
                const std::vector<std::string>& passthrough, const std::string& result_file) {
  std::vector<std::string> args{runner, "--model=" + model, "--show_progress=false",
                                "--state=WARNING", "--result_file=" + result_file};
  args.insert(args.end(), passthrough.begin(), passthrough.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::filesystem::remove(result_file);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw recbole::Error("bench_models: fork failed");
  if (pid == 0) {
    // Quiet child: the log goes to /dev/null, errors still reach the terminal.
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Sample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw recbole::Error("bench_models: " + model + " failed (exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  std::ifstream in(result_file);
  const nlohmann::json result = nlohmann::json::parse(in);
  s.train_s = result["timing"]["train_s_per_epoch"].get<double>();
  s.eval_s = result["timing"]["eval_s_per_epoch"].get<double>();
  s.epochs = result["epochs_run"].get<double>();
  s.ndcg = result["test_result"].value("ndcg@10", 0.0);
  return s;
}

constexpr const char* kUsage =
    "usage: bench_models [--models=A,B,...] [--repeat=N] [--run=PATH] [recbole_run "
    "arguments...]\n\n"
    "Runs recbole_run (or PATH) once per model and repeat, each as a whole process, and prints\n"
    "one Markdown table of medians: wall time, train s/epoch, eval s, epochs, peak RSS, ndcg@10.\n"
    "Models default to every registered general model except the fitted-once ones.\n"
    "  --version  print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "bench_models", kUsage)) return 0;
  try {
    std::vector<std::string> models, passthrough;
    int repeat = 3;
    std::string runner = default_runner();
    for (int a = 1; a < argc; ++a) {
      const std::string arg = argv[a];
      if (arg.rfind("--models=", 0) == 0)
        models = split(arg.substr(9));
      else if (arg.rfind("--repeat=", 0) == 0)
        repeat = std::max(1, std::stoi(arg.substr(9)));
      else if (arg.rfind("--run=", 0) == 0)
        runner = arg.substr(6);
      else
        passthrough.push_back(arg);
    }
    if (models.empty()) {
      recbole::models::register_builtin_models();
      for (const auto& d : recbole::models::registered_models())
        if ((d.task == "general" || d.task == "context" || d.task == "knowledge") &&
            d.input != recbole::models::InputType::kFitOnce)
          models.push_back(d.name);
    }
    const std::string result_file = (std::filesystem::temp_directory_path() /
                                     ("bench_models_" + std::to_string(getpid()) + ".json"))
                                        .string();
    std::map<std::string, std::vector<Sample>> samples;
    for (int r = 0; r < repeat; ++r)
      for (const std::string& m : models) {
        samples[m].push_back(run_once(runner, m, passthrough, result_file));
        std::fprintf(stderr, "%s run %d: %.2f s\n", m.c_str(), r + 1, samples[m].back().wall_s);
      }
    std::filesystem::remove(result_file);

    std::printf(
        "| model | whole run s | train s/epoch | eval s | epochs | peak RSS MiB | "
        "test ndcg@10 |\n|---|---|---|---|---|---|---|\n");
    for (const std::string& m : models) {
      auto field = [&](double Sample::*f) {
        std::vector<double> v;
        for (const Sample& s : samples[m]) v.push_back(s.*f);
        return median(v);
      };
      std::printf("| %s | %.2f | %.4f | %.4f | %.0f | %.0f | %.4f |\n", m.c_str(),
                  field(&Sample::wall_s), field(&Sample::train_s), field(&Sample::eval_s),
                  field(&Sample::epochs), field(&Sample::rss_mb), field(&Sample::ndcg));
    }
    std::printf(
        "\nMedians of %d whole-process run(s) per model; eval s is seconds per "
        "evaluation (validation).\n",
        repeat);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_models: error: " << e.what() << "\n";
    return 1;
  }
}

#include "run/run_recbole.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include <torch/torch.h>

#include "kernels/jit_gemm.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/config/config_entries.h"
#include "recbole/data/dataset.h"
#include "recbole/data/dataset_location.h"
#include "recbole/data/split.h"
#include "recbole/evaluator/metric_values.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/runtime/dist.h"
#include "recbole/runtime/dist_agreement.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/thread_pool.h"
#include "run/report/html_report.h"
#include "tasks/serving_section.h"
#include "tasks/task_family.h"
#include "trainer/evaluator.h"
#include "trainer/gradient_exchange.h"
#include "trainer/resume_checkpoint.h"
#include "trainer/trainer.h"

namespace recbole {
namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

// log/<model>/<model>-<dataset>-<Mon-DD-YYYY_HH-MM-SS>-<hash of the config>.log, as RecBole.
std::string log_file_path(const config::Config& config) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%b-%d-%Y_%H-%M-%S", &tm);
  char hash[16];
  std::snprintf(hash, sizeof hash, "%06zx", std::hash<std::string>{}(config.dump()) & 0xffffff);
  return (std::filesystem::path(config.get_string("log_dir")) / config.model() /
          (config.model() + "-" + config.dataset() + "-" + buf + "-" + hash + ".log"))
      .string();
}

// Creates `dir` and makes sure a file can be created in it, by creating and removing one
// (access(2) says yes to root anywhere, /proc included); the error names `key`.
void require_writable_dir(const config::Config& config, const std::string& key,
                          const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::create_directories(dir, ec) && ec)
    throw ConfigError(config.source(key) + ": " + key + ": cannot create \"" + dir.string() +
                      "\": " + ec.message());
  const std::string probe = (dir / (".recbole-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    throw ConfigError(config.source(key) + ": " + key + ": cannot create files in \"" +
                      dir.string() + "\"");
  ::close(fd);
  ::unlink(probe.c_str());
}

// The output locations, checked before any work: a directory key naming a file (or a file key
// naming a directory) would otherwise fail after training, or after the first epoch.
void check_output_paths(const config::Config& config) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* key : {"checkpoint_dir", "log_dir"}) {
    const fs::path p(config.get_string(key));
    if (fs::exists(p, ec) && !fs::is_directory(p, ec))
      throw ConfigError(config.source(key) + ": " + key + ": \"" + p.string() +
                        "\" is a file; expected a directory (created when missing)");
    require_writable_dir(config, key, p);
  }
  // The output files: a folder there, or a file on the way to it, fails now rather than after
  // training.
  for (const auto& [key, what] : {std::pair<const char*, const char*>{"result_file", "a JSON file"},
                                  std::pair<const char*, const char*>{"report", "an HTML file"}}) {
    if (config.is_null(key)) continue;
    const fs::path p(config.get_string(key));
    if (fs::is_directory(p, ec))
      throw ConfigError(config.source(key) + ": " + key + ": \"" + p.string() +
                        "\" is a directory; expected the path of " + what);
    for (fs::path parent = p.parent_path(); !parent.empty(); parent = parent.parent_path()) {
      if (fs::exists(parent, ec)) {
        if (!fs::is_directory(parent, ec))
          throw ConfigError(config.source(key) + ": " + key + ": \"" + p.string() + "\": \"" +
                            parent.string() + "\" is a file, not a directory");
        break;
      }
      if (parent == parent.parent_path()) break;
    }
    require_writable_dir(config, key, p.has_parent_path() ? p.parent_path() : fs::path("."));
  }
}

// Rank 0 writes the result file and the report, each when asked for, atomically.
void write_outputs(const config::Config& config, Dist& dist, const RunResult& result) {
  if (!dist.is_main()) return;
  if (config.is_null("result_file") && config.is_null("report")) return;
  const nlohmann::json j = result.to_json();
  if (!config.is_null("result_file"))
    write_file_atomically(config.get_string("result_file"), j.dump(2) + "\n");
  if (!config.is_null("report")) {
    write_file_atomically(config.get_string("report"), report::render_run_report(j), "the report");
    log::info("report: " + config.get_string("report"));
  }
}

// Makes sure the dataset's files exist (data_path, else a shipped copy, else a download: see
// recbole/data/dataset_location.h) on the local main rank, then every rank meets at a barrier
// (a no-op in a single process) before anyone reads them.
void prepare_dataset_files(const config::Config& config, Dist& dist) {
  if (dist.is_local_main()) data::ensure_dataset(config);
  dist.barrier("dataset files ready");
}

// After training every rank must hold rank 0's parameters bit for bit; a difference means the
// ranks took different paths, and the run fails loudly instead of reporting a silent mix.
void check_parameters_identical(const models::Model& model, Dist& dist) {
  if (!dist.active()) return;
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the raw bytes of every parameter
  for (const auto& p : model.parameters()) {
    torch::Tensor c = DeviceManager::to_host(p.detach()).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t k = 0; k < c.nbytes(); ++k) h = (h ^ bytes[k]) * 1099511628211ULL;
  }
  torch::Tensor all = dist.all_gather_cat(torch::tensor({static_cast<int64_t>(h)}, torch::kInt64));
  for (int64_t r = 1; r < all.numel(); ++r)
    if (all[r].item<int64_t>() != all[0].item<int64_t>())
      throw DistError("parameters differ between rank 0 and rank " + std::to_string(r) +
                      " after training: the ranks did not take the same path");
  log::info("parameters identical on all " + std::to_string(dist.world_size()) + " ranks");
}

double peak_rss_mb() { return static_cast<double>(memory::peak_rss_bytes()) / (1024.0 * 1024.0); }

// The result of a run a stop request ended: no test; the result file says interrupted and where
// to continue from, and so does the log's last line.
RunResult stopped_result(const config::Config& config, Dist& dist, const trainer::FitResult& fit,
                         RunResult result, Clock::time_point t_start) {
  result.stop_signal = fit.stop_signal;
  result.resume_path = fit.resume_path;
  result.timing.train_s_per_epoch = mean(fit.train_seconds);
  result.timing.eval_s_per_epoch = mean(fit.eval_seconds);
  result.timing.total_s = seconds_since(t_start);
  result.peak_rss_mb = peak_rss_mb();
  write_outputs(config, dist, result);
  if (fit.resume_path.empty())
    log::info(std::string("stopped by ") + signal_name(fit.stop_signal) +
              ": nothing to resume; rerun the command");
  else
    log::info(std::string("stopped by ") + signal_name(fit.stop_signal) + " after " +
              std::to_string(fit.epochs_run) +
              " epoch(s); resume with --resume=" + fit.resume_path);
  log::set_file("");
  return result;
}

}  // namespace

nlohmann::json RunResult::to_json() const {
  nlohmann::json j;
  j["model"] = model;
  j["dataset"] = dataset;
  j["best_valid_score"] = best_valid_score ? nlohmann::json(*best_valid_score) : nlohmann::json();
  j["valid_score_bigger"] = valid_score_bigger;
  // Into a nlohmann::json: the metric names come out sorted, as users have always read them.
  j["best_valid_result"] = evaluator::metric_values_to_json(best_valid_result);
  j["test_result"] = evaluator::metric_values_to_json(test_result);
  j["epochs_run"] = epochs_run;
  j["best_epoch"] = best_epoch;
  j["history"] = history;
  j["interrupted"] = interrupted();
  j["checkpoint"] = checkpoint;
  if (interrupted()) {
    j["stop_signal"] = signal_name(stop_signal);
    j["resume_checkpoint"] = resume_path;
  }
  j["timing"] = {{"data_s", timing.data_s},
                 {"train_s_per_epoch", timing.train_s_per_epoch},
                 {"eval_s_per_epoch", timing.eval_s_per_epoch},
                 {"total_s", timing.total_s}};
  j["peak_rss_mb"] = peak_rss_mb;
  j["config"] = nlohmann::json::array();
  for (const ConfigValue& c : config)
    j["config"].push_back(
        {{"section", c.section}, {"key", c.key}, {"value", c.value}, {"source", c.source}});
  j["dataset_stats"] = {{"n_users", dataset_stats.n_users},
                        {"n_items", dataset_stats.n_items},
                        {"n_interactions", dataset_stats.n_interactions},
                        {"sparsity", dataset_stats.sparsity},
                        {"train", dataset_stats.train},
                        {"valid", dataset_stats.valid},
                        {"test", dataset_stats.test}};
  return j;
}

RunResult run_recbole(const std::string& model, const std::string& dataset,
                      const std::vector<std::string>& config_files,
                      const std::vector<std::pair<std::string, std::string>>& overrides) {
  config::ConfigSources sources;
  sources.model = model;
  sources.dataset = dataset;
  sources.config_files = config_files;
  sources.api_overrides = overrides;
  return run(config::Config::build(sources));
}

RunResult run(const config::Config& config) {
  const auto t_start = Clock::now();
  // fast_path: false runs the reference path everywhere, model construction included.
  FastPathGuard fast_paths(config.get_bool("fast_path"));
  check_output_paths(config);
  Dist dist(detect_dist_settings(config), /*cuda=*/false);
  // Ranks other than 0 log errors only; rank 0 logs at the configured level, also to a file.
  log::set_level(dist.is_main() ? log::parse_level(config.get_string("state"))
                                : log::Level::kError);
  if (dist.is_main()) {
    const std::string log_path = log_file_path(config);
    log::set_file(log_path);
    log::info("log file: " + log_path);
  }
  DeviceManager device =
      DeviceManager::from_config(config, dist.local_rank(), dist.local_world_size());
  if (dist.active() && device.is_cuda())
    throw DistError(
        "several processes on CUDA need the NCCL backend, which this build of "
        "recbole-cpp does not provide yet; run them with device: cpu (Gloo), or use "
        "one process per GPU machine");
  log::info(config.dump());
  const std::string blas = blas_kernels();
  log::info("device: " + device.name() +
            (dist.active() ? ", rank " + std::to_string(dist.rank()) + " of " +
                                 std::to_string(dist.world_size())
                           : std::string()) +
            (blas.empty() ? std::string() : "; BLAS kernels: OpenBLAS " + blas) +
            "; GRU GEMMs: " + kernels::jit_gemm_kernels());

  // An unknown model name fails before any data is read or downloaded.
  const models::ModelDescriptor& descriptor = models::find_model(config.model());
  // So does a resume checkpoint that does not match this run.
  const std::string resume = trainer::resolve_resume(config);
  if (!resume.empty()) {
    if (descriptor.input == models::InputType::kFitOnce)
      throw ConfigError(config.source("resume") + ": resume: " + config.model() +
                        " is fitted once and has nothing to resume; remove the key");
    trainer::check_resume_compatible(trainer::read_resume_header(resume), config, dist.world_size(),
                                     resume);
  }

  // Data: the local main rank fetches files; every rank builds the same dataset and split.
  auto t0 = Clock::now();
  prepare_dataset_files(config, dist);
  const data::DatasetOptions options = data::DatasetOptions::from_config(config);
  const data::Dataset dataset = data::Dataset::load(options);
  // The model's task family splits the dataset its own way (none here for a family that cuts
  // its samples in its pipeline); the ranks compare the split before anything is built on it.
  const tasks::TaskFamily& family = tasks::find_family(descriptor.task);
  std::shared_ptr<const data::SplitDataset> split =
      family.split ? family.split(config, dataset) : nullptr;
  check_ranks_agree(config, split ? *split : data::SplitDataset{}, dataset.n_users(),
                    dataset.n_items(), dist);
  // The family's pipeline turns the split into the parts of the run: what the model is built
  // from, its training source, the evaluation sources.
  const std::unique_ptr<tasks::TaskPipeline> task =
      tasks::make_task_pipeline(family, config, dataset, std::move(split));
  const tasks::TaskPipeline::SplitSizes sizes = task->split_sizes();
  const std::string unit = sizes.unit;
  RunResult result;
  result.timing.data_s = seconds_since(t0);
  for (const config::ConfigEntry& e : config::config_entries(config))
    result.config.push_back({e.section, e.key, e.value, e.source});
  result.dataset_stats = {dataset.n_users(),  dataset.n_items(), dataset.n_inters(),
                          dataset.sparsity(), sizes.train,       sizes.valid,
                          sizes.test};
  log::info(dataset.summary());
  log::info("split sizes: train " + std::to_string(sizes.train) + ", valid " +
            std::to_string(sizes.valid) + ", test " + std::to_string(sizes.test) +
            (unit == "interactions" ? "" : " " + unit));
  if (sizes.train == 0)
    throw DataError("the train split is empty (train 0, valid " + std::to_string(sizes.valid) +
                    ", test " + std::to_string(sizes.test) + " " + unit +
                    "): expected eval_args.split to give the train set a share "
                    "(eval_args is set by " +
                    config.source("eval_args") + ")");
  // Metrics over no users would be 0/0: say so before any training instead of printing NaN.
  if (sizes.test == 0)
    throw DataError("the test split is empty (train " + std::to_string(sizes.train) + ", valid " +
                    std::to_string(sizes.valid) + ", test 0 " + unit +
                    "): expected eval_args.split to give the test set a "
                    "share and the users enough interactions to fill it (eval_args is set by " +
                    config.source("eval_args") + ")");
  if (sizes.valid == 0)
    log::warning(
        "the valid split is empty: no validation or early stopping; the model after "
        "the last epoch is tested");

  // Same seed on every rank: identical initial weights (rank 0's are broadcast anyway).
  device.seed(static_cast<uint64_t>(config.get_int("seed")));
  std::shared_ptr<models::Model> model =
      models::create_model(config.model(), task->model_context(device));
  log::info(model->describe());
  log::info("Trainable parameters: " + std::to_string(model->trainable_parameter_count()));

  const std::unique_ptr<tasks::TrainingSource> source =
      task->training_source(model->input_type(), config.model(), dist.rank(), dist.world_size());
  evaluator::Evaluator evaluator(evaluator::evaluator_settings_from_config(config), device, dist,
                                 task->n_items(), task->item_train_count());
  trainer::Trainer trainer(config, *model, device, dist, source.get(), evaluator,
                           {task->valid(), task->test()});
  // The best-model checkpoint stands alone: vocabularies, history and config beside the model
  // (tasks/serving_section.h), for recbole::Recommender.
  if (dist.is_main())
    trainer.set_checkpoint_extras(serving::serving_section_writer(config, dataset, *task, device));
  if (!resume.empty()) trainer.resume(resume);
  trainer::FitResult fit = trainer.fit();
  trainer::log_gradient_exchange_stats(dist, fit.epochs_run);
  result.model = config.model();
  result.dataset = config.dataset();
  result.best_valid_score = fit.best_valid_score;
  result.valid_score_bigger = config.get_bool("valid_metric_bigger");
  result.best_valid_result = fit.best_valid_result;
  result.epochs_run = fit.epochs_run;
  result.best_epoch = fit.best_epoch;
  result.history = trainer::history_to_json(fit.history);
  result.checkpoint = fit.checkpoint_path;
  if (fit.stop_signal) return stopped_result(config, dist, fit, std::move(result), t_start);
  auto t_test = Clock::now();
  result.test_result = trainer.test(/*load_best=*/true);
  const double test_s = seconds_since(t_test);
  check_parameters_identical(*model, dist);

  result.timing.train_s_per_epoch = mean(fit.train_seconds);
  result.timing.eval_s_per_epoch = fit.eval_seconds.empty() ? test_s : mean(fit.eval_seconds);
  result.timing.total_s = seconds_since(t_start);
  result.peak_rss_mb = peak_rss_mb();
  const int places = static_cast<int>(config.get_int("metric_decimal_place"));
  log::info("best valid : " + evaluator::format_metrics(result.best_valid_result, places));
  log::info("test result: " + evaluator::format_metrics(result.test_result, places));
  write_outputs(config, dist, result);
  log::set_file("");
  return result;
}

}  // namespace recbole

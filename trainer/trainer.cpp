#include "trainer/trainer.h"

#include "models/capabilities.h"

#include "recbole/config/config_snapshot.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "recbole/config/config.h"
#include "recbole/config/learners.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/runtime/device_allocator.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/progress.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/text.h"
#include "trainer/fused_adam.h"
#include "trainer/gradient_exchange.h"

namespace recbole::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string fixed(double v, int places) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", places, v);
  return buf;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::Config& config,
                                                        std::vector<torch::Tensor> params) {
  const double lr = config.get_double("learning_rate");
  const double wd = config.get_double("weight_decay");
  // The config accepts only the names of learner_names().
  switch (*config::parse_learner(config.get_string("learner"))) {
    case config::Learner::kAdam:
      if (!fast_paths_enabled())
        return std::make_unique<torch::optim::Adam>(params,
                                                    torch::optim::AdamOptions(lr).weight_decay(wd));
      return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr).weight_decay(wd));
    case config::Learner::kAdamW:
      return std::make_unique<torch::optim::AdamW>(params,
                                                   torch::optim::AdamWOptions(lr).weight_decay(wd));
    case config::Learner::kSgd:
      return std::make_unique<torch::optim::SGD>(params,
                                                 torch::optim::SGDOptions(lr).weight_decay(wd));
    case config::Learner::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(
          params, torch::optim::AdagradOptions(lr).weight_decay(wd));
    case config::Learner::kRmsprop:
      return std::make_unique<torch::optim::RMSprop>(
          params, torch::optim::RMSpropOptions(lr).weight_decay(wd));
    case config::Learner::kSparseAdam:
      // libtorch's C++ API has no SparseAdam and our embeddings take dense gradients (as
      // RecBole's do, where sparse_adam then fails); Adam without weight decay is the closest
      // honest choice.
      if (wd > 0) log::warning("learner sparse_adam ignores weight_decay, as in RecBole");
      log::warning("learner sparse_adam: dense embeddings; using Adam without weight decay");
      if (!fast_paths_enabled())
        return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
      return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr));
  }
  throw Error("learner: no optimizer for \"" + config.get_string("learner") + "\"");
}

// Rank 0's start time and pid name the checkpoint; other ranks receive them so that every rank
// agrees on the path.
std::string checkpoint_name(const config::Config& config, Dist& dist) {
  torch::Tensor stamp = torch::tensor(
      {static_cast<int64_t>(std::time(nullptr)), static_cast<int64_t>(::getpid())}, torch::kInt64);
  dist.broadcast(stamp, 0);
  std::time_t now = static_cast<std::time_t>(stamp[0].item<int64_t>());
  const int64_t pid = stamp[1].item<int64_t>();
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%b-%d-%Y_%H-%M-%S", &tm);
  // The pid keeps two runs started in the same second apart.
  return (std::filesystem::path(config.get_string("checkpoint_dir")) /
          (config.model() + "-" + buf + "-" + std::to_string(pid) + ".pth"))
      .string();
}

}  // namespace

Error nan_loss_error(const std::string& model, int64_t epoch) {
  return Error("Training loss is nan at epoch " + std::to_string(epoch) + " (model " + model +
               "): lower learning_rate or set clip_grad_norm");
}

// The batch loop's side of a training step: one optimizer per parameter group of the model,
// gradient averaging over ranks and clipping.
class Trainer::Step : public models::TrainStep {
 public:
  Step(const config::Config& config, models::Model& model, Dist& dist)
      : model_(model), dist_(dist) {
    for (auto& group : model.optimizer_groups())
      optimizers_.push_back(make_optimizer(config, group));
    if (!config.is_null("clip_grad_norm")) {
      YAML::Node c = config.node("clip_grad_norm");
      max_norm_ = c["max_norm"].as<double>();
      if (c["norm_type"]) norm_type_ = c["norm_type"].as<double>();
    }
  }
  torch::optim::Optimizer& optimizer(size_t k) override {
    if (k >= optimizers_.size())
      throw Error(model_.name() + ": optimizer " + std::to_string(k) +
                  " asked for, but the model has " + std::to_string(optimizers_.size()) +
                  " parameter group(s)");
    return *optimizers_[k];
  }
  size_t count() const { return optimizers_.size(); }
  void finish_gradients() override {
    average_gradients();
    if (max_norm_) torch::nn::utils::clip_grad_norm_(model_.parameters(), *max_norm_, norm_type_);
  }

 private:
  // The mean over ranks (trainer/gradient_exchange.h: dense, or only the rows a batch used).
  void average_gradients() { trainer::average_gradients(model_.parameters(), dist_); }

  models::Model& model_;
  Dist& dist_;
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers_;
  std::optional<double> max_norm_;
  double norm_type_ = 2;
};

Trainer::Trainer(const config::Config& config, models::Model& model, const DeviceManager& device,
                 Dist& dist, tasks::TrainingSource* source, const evaluator::Evaluator& evaluator,
                 EvaluationSplits splits)
    : fast_paths_(config.get_bool("fast_path")),
      config_(config),
      model_(model),
      device_(device),
      dist_(dist),
      source_(source),
      evaluator_(evaluator),
      splits_(splits),
      checkpoint_path_(checkpoint_name(config, dist)),
      run_(checkpoint_path_.substr(0, checkpoint_path_.size() - 4)),
      config_snapshot_(config::config_snapshot(config)),
      writer_(std::make_unique<CheckpointWriter>()) {
  if (model_.fitted_once()) return;
  if (!source_) throw Error(model_.name() + ": a trained model needs a training source");
  use_dynamic_negatives();
  if (auto* own = models::capability<models::OwnEpoch>(model_))
    fast_ = own->fast_epoch(
        models::TrainingEnv{config_, device_, dist_.world_size(), source_->sampled_pair_batcher()});
  if (fast_)
    log::info("training path: " + fast_->describe());
  else {
    step_ = std::make_unique<Step>(config_, model_, dist_);
    memory::keep_freed_buffers_mapped();     // the generic path allocates at every op
    use_huge_pages_for_large_cpu_tensors();  // and faults its largest buffers in afresh
  }
}

Trainer::~Trainer() = default;

void Trainer::use_dynamic_negatives() {
  if (!tasks::negative_sampling_from_config(config_).dynamic()) return;
  // RecBole's loader scores the candidates with predict after model.eval() and goes back to
  // model.train(): dropout off while scoring, no gradient; a cached model recomputes, since
  // the last step dropped its cache.
  const bool taken =
      source_->set_candidate_scorer([this](const data::Batch& candidates, int64_t candidate_num) {
        torch::NoGradGuard no_grad;
        model_.eval();
        const data::Batch placed = device_.place(candidates);
        auto* once = models::capability<models::CandidateScores>(model_);
        torch::Tensor scores =
            once ? once->predict_candidates(placed, candidate_num) : model_.predict(placed);
        model_.train();
        device_.check(scores, model_.name(), "dynamic negative sampling scores");
        return DeviceManager::to_host(scores);
      });
  if (!taken)
    throw ConfigError(config_.source("train_neg_sample_args") +
                      ": train_neg_sample_args.dynamic: true (each negative the best-scored of "
                      "candidate_num candidates) applies to the models that train on sampled "
                      "negatives: pairwise and pointwise general and knowledge models, BPR-loss "
                      "sequential models, context models; " +
                      model_.name() +
                      "'s training source does not draw that way (a RecBole option not "
                      "supported yet for it); expected false");
}

void Trainer::sync_initial_parameters() {
  if (!dist_.active()) return;
  torch::NoGradGuard no_grad;
  for (auto& p : model_.parameters()) dist_.broadcast(p, 0);
}

int Trainer::agreed_stop() {
  const int local = stop_requested();
  if (!dist_.active()) return local;
  // Every rank calls this at the same points (after each batch, at each epoch's start), so
  // every rank learns of a signal that reached any of them after the same batch.
  const torch::Tensor all =
      dist_.all_gather_cat(torch::tensor({static_cast<int64_t>(local)}, torch::kInt64));
  for (int64_t r = 0; r < all.numel(); ++r)
    if (const int64_t sig = all[r].item<int64_t>()) return static_cast<int>(sig);
  return 0;
}

int Trainer::train_epoch(int64_t epoch) {
  model_.train();
  // A resumed epoch does not run its start hooks again: the model's training state holds what
  // they prepared (Model::save_training_state).
  if (point_.pass == 0 && point_.batch == 0) model_.on_epoch_start(epoch);
  // A model with several passes per epoch sees a new order in each: pass p of epoch e walks
  // the source's order number e · passes + p (one pass: the epoch's own order).
  auto* multi = models::capability<models::MultiPassEpoch>(model_);
  const int64_t passes = fast_ || !multi ? 1 : std::max<int64_t>(multi->passes_per_epoch(), 1);
  // The epoch's batches, over all its passes, drawn by rank 0 on the reporter's own thread: the
  // batch loop pays one atomic increment per batch.
  const int64_t batches = source_->batches_per_epoch();
  ProgressOptions progress_options;
  progress_options.label = "Train " + std::to_string(epoch);
  progress_options.total = passes * batches;
  progress_options.done = point_.pass * batches + point_.batch;
  progress_options.enabled = config_.get_bool("show_progress") && dist_.is_main();
  Progress progress(progress_options);
  int stop = 0;
  auto after_batch = [&] {
    ++point_.batch;
    progress.advance();
    stop = agreed_stop();
    return stop != 0;
  };
  if (fast_) {
    source_->start_epoch(epoch);
    source_->skip_batches(point_.batch);
    fast_->train_epoch(epoch_loss_, after_batch);
    if (stop) return stop;
  } else {
    // Summed on the device: one device→host sync per epoch rather than per batch. (A float
    // tensor holds the float sum exactly, so a resumed epoch goes on from the same value.)
    torch::Tensor total = torch::full({}, epoch_loss_, device_.float_options());
    for (; point_.pass < passes; ++point_.pass, point_.batch = 0) {
      const models::PassBatches walks =
          multi ? multi->pass_batches(epoch, point_.pass) : models::PassBatches::kMain;
      if (walks == models::PassBatches::kSkip) continue;
      source_->use_batches(walks);
      source_->start_epoch(epoch * passes + point_.pass);
      if (point_.batch > 0)
        source_->skip_batches(point_.batch);
      else if (multi)
        multi->on_pass_start(point_.pass);
      data::Batch batch;
      while (source_->next(batch)) {
        torch::Tensor loss = model_.train_step(device_.place(batch), *step_);
        device_.check(loss, model_.name(), "loss");
        total += loss.detach();
        // Large buffers are reused within a batch (the backward's for the forward's), not
        // kept from one batch to the next: kept ones would sit beside the small allocations
        // that peak elsewhere in the step (ConvNCF: peak RSS +41 % kept across batches, +9 %
        // within; NAIS: +2.5 %, 0 %).
        release_kept_large_cpu_buffers();
        if (after_batch()) {
          epoch_loss_ = total.item<double>();
          return stop;
        }
      }
    }
    epoch_loss_ = total.item<double>();
  }
  if (std::isnan(epoch_loss_)) throw nan_loss_error(model_.name(), epoch);
  model_.on_epoch_end(epoch);
  return 0;
}

void Trainer::save_checkpoint(const std::string& path) const {
  if (!dist_.is_main()) return;
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  model_.save(*archive);
  if (extras_) extras_(*archive);
  // Through write_file_atomically, not libtorch's file writer: that one, on a full disk, throws
  // from a destructor and aborts the process (std::terminate).
  try {
    write_file_atomically(path, checkpoint_bytes(archive), "the checkpoint", /*durable=*/true);
  } catch (const Error& e) {
    throw Error("checkpoint_dir: " + std::string(e.what()) +
                " (the previous checkpoint, if any, is kept)");
  }
}

namespace {

// Resume checkpoints at epoch ends use at most 1/kWriteShare of the time (see fit()).
constexpr double kWriteShare = 20;

// Every parameter and buffer of the model, in a fixed order.
std::vector<torch::Tensor> model_state(models::Model& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const torch::Tensor& b : model.buffers()) state.push_back(b);
  return state;
}

nlohmann::json metrics_json(const MetricValues& values) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [k, v] : values) j.push_back({k, v});
  return j;
}

MetricValues metrics_from_json(const nlohmann::json& j) {
  MetricValues values;
  for (const auto& kv : j) values.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<double>());
  return values;
}

// The temporary files a killed process left beside the run's checkpoints (write_file_atomically
// names them <file>.tmp-<pid>); the rename they were waiting for never came.
void remove_temporary_files(const std::string& run) {
  if (run.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(run).parent_path();
  const std::string prefix = std::filesystem::path(run).filename().string();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find(".pth.tmp-") != std::string::npos)
      std::filesystem::remove(e.path(), ec);
  }
}

}  // namespace

void Trainer::keep_best() {
  if (!dist_.is_main()) return;
  torch::NoGradGuard no_grad;
  // New tensors each time, never copies into the old ones: a resume snapshot may still hold
  // the old ones, waiting for the writer.
  best_state_.clear();
  for (const torch::Tensor& t : model_state(model_)) best_state_.push_back(t.detach().clone());
  best_unwritten_ = true;
  // As the resume checkpoints: at most 1/kWriteShare of the time; the best model stays in
  // memory (and in the resume checkpoints) until written.
  if (seconds_since(last_best_write_) < kWriteShare * writer_->last_seconds("best")) return;
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  snapshot_module(model_, *archive);
  if (extras_) extras_(*archive);
  writer_->submit("best", checkpoint_path_, "the checkpoint", checkpoint_bytes(std::move(archive)));
  best_unwritten_ = false;
  last_best_write_ = Clock::now();
}

void Trainer::write_best() {
  if (!dist_.is_main() || best_state_.empty() || !best_unwritten_) return;
  // The snapshot reads the model: put the best values into it for that moment, and the current
  // ones back after.
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> live = model_state(model_);
  std::vector<torch::Tensor> current;
  current.reserve(live.size());
  for (size_t k = 0; k < live.size(); ++k) {
    current.push_back(live[k].clone());
    live[k].copy_(best_state_[k]);
  }
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  snapshot_module(model_, *archive);
  for (size_t k = 0; k < live.size(); ++k) live[k].copy_(current[k]);
  if (extras_) extras_(*archive);
  writer_->submit("best", checkpoint_path_, "the checkpoint", checkpoint_bytes(std::move(archive)));
  best_unwritten_ = false;
  last_best_write_ = Clock::now();
}

std::shared_ptr<torch::serialize::OutputArchive> Trainer::resume_archive() {
  auto archive_ptr = std::make_shared<torch::serialize::OutputArchive>();
  torch::serialize::OutputArchive& archive = *archive_ptr;
  nlohmann::json meta = {
      {"format", kResumeFormat},
      {"model", config_.model()},
      {"dataset", config_.dataset()},
      {"config", config_snapshot_},
      {"world_size", dist_.world_size()},
      {"epoch", point_.epoch},
      {"pass", point_.pass},
      {"batch", point_.batch},
      {"run", run_},
      {"epoch_loss", epoch_loss_},
      {"epoch_seconds", epoch_seconds_},
      {"best_score", best_score_ ? nlohmann::json(*best_score_) : nullptr},
      {"cur_step", cur_step_},
      {"best_valid_score",
       result_.best_valid_score ? nlohmann::json(*result_.best_valid_score) : nullptr},
      {"best_valid_result", metrics_json(result_.best_valid_result)},
      {"epochs_run", result_.epochs_run},
      {"best_epoch", result_.best_epoch},
      {"train_seconds", result_.train_seconds},
      {"eval_seconds", result_.eval_seconds},
      {"checkpoint_path", result_.checkpoint_path},
      {"history", history_to_json(result_.history)},
      {"optimizers", step_ ? step_->count() : 0},
      {"best_tensors", best_state_.size()},
  };
  archive.write("resume_meta", c10::IValue(meta.dump()));
  torch::serialize::OutputArchive model;
  snapshot_module(model_, model);
  archive.write("model", model);
  torch::serialize::OutputArchive model_training;
  model_.save_training_state(model_training);
  archive.write("model_training_state", model_training);
  if (step_)
    for (size_t k = 0; k < step_->count(); ++k) {
      torch::serialize::OutputArchive optimizer;
      step_->optimizer(k).save(optimizer);
      detach_optimizer_state(step_->optimizer(k));
      archive.write("optimizer_" + std::to_string(k), optimizer);
    }
  if (fast_) {
    torch::serialize::OutputArchive fast;
    fast_->save(fast);
    archive.write("fast_epoch", fast);
  }
  const std::vector<torch::Tensor> generators = device_.generator_states();
  for (size_t k = 0; k < generators.size(); ++k)
    archive.write("generator_" + std::to_string(k), generators[k]);
  for (size_t k = 0; k < best_state_.size(); ++k)
    archive.write("best_" + std::to_string(k), best_state_[k]);
  return archive_ptr;
}

std::string Trainer::write_resume(bool wait) {
  const std::string path = resume_path(run_, point_);
  last_resume_write_ = Clock::now();
  if (dist_.is_main()) {
    const int64_t keep = std::max<int64_t>(config_.get_int("checkpoint_keep"), 1);
    const std::string run = run_;
    // After the rename: the run's older resume checkpoints beyond checkpoint_keep go.
    const auto t0 = Clock::now();
    auto archive = resume_archive();
    resume_snapshot_s_ += seconds_since(t0);
    ++resume_writes_;
    writer_->submit("resume", path, "the resume checkpoint", checkpoint_bytes(std::move(archive)),
                    [run, keep](const std::string& written) {
                      std::vector<std::string> files = resume_files_of(run);
                      files.erase(std::remove(files.begin(), files.end(), written), files.end());
                      const int64_t extra = static_cast<int64_t>(files.size()) + 1 - keep;
                      std::error_code ignored;
                      for (int64_t k = 0; k < extra; ++k)
                        std::filesystem::remove(files[static_cast<size_t>(k)], ignored);
                    });
    if (wait) writer_->wait();
  }
  return path;
}

void Trainer::resume(const std::string& path) {
  const ResumeHeader header = read_resume_header(path);
  torch::serialize::InputArchive archive;
  load_checkpoint_archive(path, "resume checkpoint", archive, device_.device());
  c10::IValue meta_value;
  archive.read("resume_meta", meta_value);
  const nlohmann::json meta = nlohmann::json::parse(meta_value.toStringRef());
  auto sub = [&](const std::string& key) {
    torch::serialize::InputArchive a;
    archive.read(key, a);
    return a;
  };
  const size_t optimizers = meta.at("optimizers").get<size_t>();
  if (optimizers != (step_ ? step_->count() : 0) || meta.at("optimizers").is_null())
    throw Error("resume checkpoint " + path + " holds " + std::to_string(optimizers) +
                " optimizer(s); this run of " + model_.name() + " has " +
                std::to_string(step_ ? step_->count() : 0) + " (fast_bpr or the learner changed?)");
  try {
    torch::serialize::InputArchive model = sub("model");
    model_.load(model);
    torch::serialize::InputArchive model_training = sub("model_training_state");
    model_.load_training_state(model_training);
    for (size_t k = 0; k < optimizers; ++k) {
      torch::serialize::InputArchive optimizer = sub("optimizer_" + std::to_string(k));
      step_->optimizer(k).load(optimizer);
    }
    if (fast_) {
      torch::serialize::InputArchive fast = sub("fast_epoch");
      fast_->load(fast);
    }
    std::vector<torch::Tensor> generators;
    for (size_t k = 0; k < device_.generator_states().size(); ++k) {
      torch::Tensor g;
      archive.read("generator_" + std::to_string(k), g);
      generators.push_back(DeviceManager::to_host(g));
    }
    device_.set_generator_states(generators);
    best_state_.clear();
    const size_t best = meta.at("best_tensors").get<size_t>();
    for (size_t k = 0; k < best; ++k) {
      torch::Tensor t;
      archive.read("best_" + std::to_string(k), t);
      best_state_.push_back(t);
    }
  } catch (const c10::Error& e) {
    throw Error("resume checkpoint " + path + " does not fit this " + model_.name() +
                " (another model size or dataset?): " + e.what_without_backtrace());
  }
  run_ = header.run;
  checkpoint_path_ = run_ + ".pth";
  // Rank 0 writes the run's files, so only it may clear them (another rank would race its
  // writes).
  if (dist_.is_main()) remove_temporary_files(run_);
  point_ = header.point;
  epoch_loss_ = meta.at("epoch_loss").get<double>();
  epoch_seconds_ = meta.at("epoch_seconds").get<double>();
  best_score_.reset();
  if (!meta.at("best_score").is_null()) best_score_ = meta.at("best_score").get<double>();
  cur_step_ = meta.at("cur_step").get<int64_t>();
  result_ = FitResult();
  if (!meta.at("best_valid_score").is_null())
    result_.best_valid_score = meta.at("best_valid_score").get<double>();
  result_.best_valid_result = metrics_from_json(meta.at("best_valid_result"));
  result_.epochs_run = meta.at("epochs_run").get<int64_t>();
  result_.best_epoch = meta.at("best_epoch").get<int64_t>();
  result_.train_seconds = meta.at("train_seconds").get<std::vector<double>>();
  result_.eval_seconds = meta.at("eval_seconds").get<std::vector<double>>();
  result_.checkpoint_path = meta.at("checkpoint_path").get<std::string>();
  result_.history = history_from_json(meta.at("history"));
  // The best model's file may be older or newer than this checkpoint (the background writer
  // was ahead or behind when the run stopped): write the one this checkpoint knows.
  best_unwritten_ = !best_state_.empty();
  write_best();
  log::info(
      "resuming " + model_.name() + " from " + path + ": epoch " + std::to_string(point_.epoch) +
      (point_.batch > 0 || point_.pass > 0 ? ", pass " + std::to_string(point_.pass) + ", after " +
                                                 std::to_string(point_.batch) + " batches"
                                           : std::string()));
}

void Trainer::load_checkpoint(const std::string& path) {
  torch::serialize::InputArchive archive;
  load_checkpoint_archive(path, "checkpoint", archive, device_.device());
  model_.load(archive);
}

nlohmann::json history_to_json(const std::vector<EpochRecord>& history) {
  nlohmann::json j = nlohmann::json::array();
  for (const EpochRecord& r : history) {
    nlohmann::json valid = nlohmann::json::object();
    for (const auto& [k, v] : r.valid_result) valid[k] = v;
    j.push_back({{"epoch", r.epoch},
                 {"train_loss", r.train_loss},
                 {"train_s", r.train_s},
                 {"valid_score", r.valid_score ? nlohmann::json(*r.valid_score) : nullptr},
                 {"valid_result", valid},
                 {"eval_s", r.eval_s}});
  }
  return j;
}

std::optional<std::string> flat_loss_warning(const std::vector<EpochRecord>& history,
                                             int64_t stopping_step) {
  constexpr double kFlat = 0.02;
  if (history.empty()) return std::nullopt;
  const double first = history.front().train_loss;
  if (first == 0 || !std::isfinite(first)) return std::nullopt;
  for (const EpochRecord& r : history)
    if (!(std::abs(r.train_loss - first) <= kFlat * std::abs(first))) return std::nullopt;
  return "early stopping ended the run after " + std::to_string(history.size()) +
         " epochs while the training loss stayed within " + fixed(100 * kFlat, 0) +
         "% of the first epoch's (" + fixed(first, 4) + ", last " +
         fixed(history.back().train_loss, 4) +
         "): if the validation scores also stayed near their first value, the model had not "
         "started learning and the one kept ranks about as at random. A larger stopping_step "
         "(now " +
         std::to_string(stopping_step) + ") gives it longer.";
}

std::vector<EpochRecord> history_from_json(const nlohmann::json& j) {
  std::vector<EpochRecord> history;
  for (const auto& e : j) {
    EpochRecord r;
    r.epoch = e.at("epoch").get<int64_t>();
    r.train_loss = e.at("train_loss").get<double>();
    r.train_s = e.at("train_s").get<double>();
    if (!e.at("valid_score").is_null()) r.valid_score = e.at("valid_score").get<double>();
    for (const auto& [k, v] : e.at("valid_result").items())
      r.valid_result.emplace_back(k, v.get<double>());
    r.eval_s = e.at("eval_s").get<double>();
    history.push_back(r);
  }
  return history;
}

MetricValues Trainer::evaluate(const tasks::EvaluationSource& split, evaluator::Phase phase) {
  model_.before_evaluation();
  MetricValues result = evaluator_.evaluate(model_, split, phase);
  release_kept_large_cpu_buffers();
  return result;
}

MetricValues Trainer::validate() { return evaluate(splits_.valid, evaluator::Phase::kValid); }

FitResult Trainer::fit_once() {
  FitResult& result = result_;
  if (const int sig = agreed_stop()) {
    log::info(std::string(signal_name(sig)) + " received before " + model_.name() +
              " was fitted: nothing was fitted or written");
    result.stop_signal = sig;
    return result;
  }
  auto t0 = Clock::now();
  {
    // A fit cannot stop part-way and has nothing to keep: a stop signal ends it at once.
    ExitOnStop exit_on_stop("stop signal while fitting " + model_.name() +
                            ": exiting; nothing was written (a fitted model has no resume "
                            "checkpoint: rerun the command)");
    model_.fit();
  }
  result.train_seconds.push_back(seconds_since(t0));
  log::info("fitted " + model_.name() + " [time: " + fixed(result.train_seconds.back(), 2) + "s]");
  result.epochs_run = 1;
  if (!splits_.valid.empty()) {
    t0 = Clock::now();
    result.best_valid_result = validate();
    result.eval_seconds.push_back(seconds_since(t0));
    const std::string valid_metric = to_lower(config_.get_string("valid_metric"));
    for (const auto& [k, v] : result.best_valid_result)
      if (k == valid_metric) result.best_valid_score = v;
    if (!result.best_valid_score)
      throw ConfigError("valid_metric: \"" + config_.get_string("valid_metric") +
                        "\" is not among the computed metrics (metrics × topk): add it to "
                        "metrics or topk");
    log::info("evaluating [time: " + fixed(result.eval_seconds.back(), 2) +
              "s, valid_score: " + fixed(*result.best_valid_score, 6) + "]");
    log::info("valid result: \n" +
              evaluator::format_metrics(result.best_valid_result,
                                        static_cast<int>(config_.get_int("metric_decimal_place"))));
  }
  result.best_epoch = 0;
  save_checkpoint(checkpoint_path_);
  result.checkpoint_path = checkpoint_path_;
  dist_.barrier("checkpoint written");
  return result;
}

FitResult Trainer::stop_run(int signal) {
  log::info(std::string(signal_name(signal)) + " received: stopping at epoch " +
            std::to_string(point_.epoch) +
            (point_.batch > 0
                 ? " after " + std::to_string(point_.batch) + " batches" +
                       (point_.pass > 0 ? " of pass " + std::to_string(point_.pass) : std::string())
                 : std::string()));
  write_best();
  result_.resume_path = write_resume(/*wait=*/true);
  result_.stop_signal = signal;
  writer_->wait();
  // Other ranks must not exit (and a launcher report them done) before rank 0 has written.
  dist_.barrier("stop checkpoint written");
  return result_;
}

FitResult Trainer::fit() {
  if (model_.fitted_once()) return fit_once();
  FitResult& result = result_;
  const int64_t epochs = config_.get_int("epochs");
  const int64_t eval_step = std::min(config_.get_int("eval_step"), std::max<int64_t>(epochs, 1));
  const int64_t stopping_step = config_.get_int("stopping_step");
  const std::string valid_metric = to_lower(config_.get_string("valid_metric"));
  const bool bigger = config_.get_bool("valid_metric_bigger");  // derived by the config
  const bool has_valid = !splits_.valid.empty();
  const int loss_places = static_cast<int>(config_.get_int("loss_decimal_place"));
  auto pick = [&](const MetricValues& values) {
    for (const auto& [k, v] : values)
      if (k == valid_metric) return v;
    throw ConfigError("valid_metric: \"" + config_.get_string("valid_metric") +
                      "\" is not among the computed metrics (metrics × topk): add it to metrics "
                      "or topk");
  };

  if (epochs == 0)
    log::warning("epochs is 0: the model is evaluated as initialised, without training");
  sync_initial_parameters();
  try {
    while (point_.epoch < epochs && cur_step_ <= stopping_step) {
      if (const int sig = agreed_stop()) return stop_run(sig);
      const int64_t epoch = point_.epoch;
      auto t0 = Clock::now();
      const int stopped = train_epoch(epoch);
      epoch_seconds_ += seconds_since(t0);
      if (stopped) return stop_run(stopped);
      EpochRecord record{epoch, epoch_loss_, epoch_seconds_, std::nullopt, {}, 0};
      result.train_seconds.push_back(epoch_seconds_);
      result.epochs_run = epoch + 1;
      log::info("epoch " + std::to_string(epoch) + " training [time: " + fixed(epoch_seconds_, 2) +
                "s, train loss: " + fixed(epoch_loss_, loss_places) + "]");
      if (eval_step <= 0 || !has_valid) {
        keep_best();
        result.checkpoint_path = checkpoint_path_;
        result.best_epoch = epoch;
      } else if ((epoch + 1) % eval_step == 0) {
        t0 = Clock::now();
        MetricValues valid = validate();
        result.eval_seconds.push_back(seconds_since(t0));
        const double score = pick(valid);
        record.valid_score = score;
        record.valid_result = valid;
        record.eval_s = result.eval_seconds.back();
        // Ties improve (RecBole).
        const double best = best_score_.value_or(bigger ? -std::numeric_limits<double>::infinity()
                                                        : std::numeric_limits<double>::infinity());
        const bool improved = bigger ? score >= best : score <= best;
        if (improved) {
          best_score_ = score;
          cur_step_ = 0;
        } else {
          ++cur_step_;
        }
        log::info("epoch " + std::to_string(epoch) +
                  " evaluating [time: " + fixed(result.eval_seconds.back(), 2) +
                  "s, valid_score: " + fixed(score, 6) + "]");
        log::info("valid result: \n" +
                  evaluator::format_metrics(
                      valid, static_cast<int>(config_.get_int("metric_decimal_place"))));
        if (improved) {
          keep_best();
          result.checkpoint_path = checkpoint_path_;
          log::debug("Saving current: " + checkpoint_path_);
          result.best_valid_score = score;
          result.best_valid_result = valid;
          result.best_epoch = epoch;
        }
        if (cur_step_ > stopping_step)
          log::info("Finished training, best eval result in epoch " +
                    std::to_string(epoch - cur_step_ * eval_step));
      }
      result.history.push_back(record);
      point_ = ResumePoint{epoch + 1, 0, 0};
      epoch_loss_ = 0;
      epoch_seconds_ = 0;
      // Every epoch, unless epochs are so short that the background writes would take more
      // than 1/kWriteShare of the time (of one core): then the first epoch end after that
      // (ml-100k's 10 ms BPR epochs: about every 8th). A stop writes its own, always.
      const bool last = point_.epoch >= epochs || cur_step_ > stopping_step;
      if (last ||
          seconds_since(last_resume_write_) >= kWriteShare * writer_->last_seconds("resume"))
        write_resume(/*wait=*/false);
    }
  } catch (...) {
    // The best model so far still reaches the disk, and what was submitted.
    try {
      write_best();
      writer_->wait();
    } catch (...) {
    }
    throw;
  }
  write_best();
  writer_->wait();
  if (cur_step_ > stopping_step)
    if (auto warning = flat_loss_warning(result.history, stopping_step)) log::warning(*warning);
  if (resume_writes_ > 0)
    log::info("resume checkpoints: " + std::to_string(resume_writes_) + " written, " +
              fixed(1000 * resume_snapshot_s_ / resume_writes_, 2) +
              " ms each on the training thread (a snapshot), the last " +
              fixed(1000 * writer_->last_seconds("resume"), 1) +
              " ms to serialise and write in the background");
  if (dist_.is_main() && config_.get_int("checkpoint_keep") == 0) {
    std::error_code ignored;
    for (const std::string& f : resume_files_of(run_)) std::filesystem::remove(f, ignored);
  }
  // Other ranks must not read the checkpoint before rank 0 has renamed it into place.
  dist_.barrier("checkpoint written");
  return result;
}

MetricValues Trainer::test(bool load_best) {
  if (load_best && !checkpoint_path_.empty() && std::filesystem::exists(checkpoint_path_)) {
    log::info("Loading model structure and parameters from " + checkpoint_path_);
    load_checkpoint(checkpoint_path_);
  }
  return evaluate(splits_.test, evaluator::Phase::kTest);
}

}  // namespace recbole::trainer

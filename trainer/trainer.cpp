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
#include "recbole/evaluator/metric_values.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/runtime/device_allocator.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/progress.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/text.h"
#include "trainer/best_model.h"
#include "trainer/gradient_exchange.h"
#include "trainer/optimizers.h"
#include "trainer/resume_state.h"

namespace recbole::trainer {
namespace {

std::string fixed(double v, int places) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", places, v);
  return buf;
}

// checkpoint_dir/<Model>-<time>-<pid>, the start of the run's file names: rank 0's start time and
// pid, which other ranks receive so that every rank agrees on the names.
std::string run_name(const config::Config& config, Dist& dist) {
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
          (config.model() + "-" + buf + "-" + std::to_string(pid)))
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
      run_(run_name(config, dist)),
      config_snapshot_(config::config_snapshot(config)),
      writer_(std::make_unique<CheckpointWriter>()),
      best_(std::make_unique<BestModel>(model, *writer_, extras_, run_ + ".pth", dist.is_main())) {
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

ResumeParts Trainer::resume_parts() {
  std::vector<torch::optim::Optimizer*> optimizers;
  if (step_)
    for (size_t k = 0; k < step_->count(); ++k) optimizers.push_back(&step_->optimizer(k));
  return {model_, std::move(optimizers), fast_.get(), device_, *best_};
}

std::string Trainer::write_resume(bool wait) {
  const std::string path = resume_path(run_, point_);
  last_resume_write_ = Clock::now();
  if (dist_.is_main()) {
    const int64_t keep = std::max<int64_t>(config_.get_int("checkpoint_keep"), 1);
    const std::string run = run_;
    // After the rename: the run's older resume checkpoints beyond checkpoint_keep go.
    const auto t0 = Clock::now();
    ResumeHeader header;
    header.format = kResumeFormat;
    header.model = config_.model();
    header.dataset = config_.dataset();
    header.config_yaml = config_snapshot_;
    header.world_size = dist_.world_size();
    header.point = point_;
    header.run = run_;
    auto archive =
        resume_archive(header, LoopState{epoch_loss_, epoch_seconds_, best_score_, cur_step_},
                       result_, resume_parts());
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
  const LoopState loop = read_resume_state(path, resume_parts(), result_);
  run_ = header.run;
  best_->set_path(run_ + ".pth");
  // Rank 0 writes the run's files, so only it may clear them (another rank would race its
  // writes).
  if (dist_.is_main()) remove_temporary_files(run_);
  point_ = header.point;
  epoch_loss_ = loop.epoch_loss;
  epoch_seconds_ = loop.epoch_seconds;
  best_score_ = loop.best_score;
  cur_step_ = loop.cur_step;
  // The best model's file may be older or newer than this checkpoint (the background writer
  // was ahead or behind when the run stopped): write the one this checkpoint knows.
  best_->write();
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
    // An ordered_json in a nlohmann::json: the names come out sorted, as in the result file.
    const nlohmann::json valid = evaluator::metric_values_to_json(r.valid_result);
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
    r.valid_result = evaluator::metric_values_from_json(e.at("valid_result"));
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
  save_checkpoint(best_->path());
  result.checkpoint_path = best_->path();
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
  best_->write();
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
        best_->keep();
        result.checkpoint_path = best_->path();
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
          best_->keep();
          result.checkpoint_path = best_->path();
          log::debug("Saving current: " + best_->path());
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
      best_->write();
      writer_->wait();
    } catch (...) {
    }
    throw;
  }
  best_->write();
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
  if (load_best && !best_->path().empty() && std::filesystem::exists(best_->path())) {
    log::info("Loading model structure and parameters from " + best_->path());
    load_checkpoint(best_->path());
  }
  return evaluate(splits_.test, evaluator::Phase::kTest);
}

}  // namespace recbole::trainer

#include "trainer/trainer.h"

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

#include "recbole/config/config.h"
#include "recbole/config/learners.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/text.h"
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
      return std::make_unique<torch::optim::Adam>(params,
                                                  torch::optim::AdamOptions(lr).weight_decay(wd));
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
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
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

// A one-line progress bar on stderr, only when stderr is a terminal.
class Progress {
 public:
  Progress(bool enabled, std::string label, int64_t total)
      : enabled_(enabled && ::isatty(2)), label_(std::move(label)), total_(total) {}
  void tick(int64_t done) {
    if (!enabled_ || total_ <= 0) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / total_);
    std::fprintf(stderr, "\r%s [%s%s] %lld/%lld", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_));
    if (done == total_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  std::string label_;
  int64_t total_;
};

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
                 Dist& dist, pipeline::TrainingSource* source,
                 const evaluator::Evaluator& evaluator, EvaluationSplits splits)
    : config_(config),
      model_(model),
      device_(device),
      dist_(dist),
      source_(source),
      evaluator_(evaluator),
      splits_(splits),
      checkpoint_path_(checkpoint_name(config, dist)) {
  if (model_.fitted_once()) return;
  if (!source_) throw Error(model_.name() + ": a trained model needs a training source");
  fast_ = model_.fast_epoch(models::TrainingEnv{config_, device_, dist_.world_size(), *source_});
  if (fast_)
    log::info("training path: " + fast_->describe());
  else {
    step_ = std::make_unique<Step>(config_, model_, dist_);
    memory::keep_freed_buffers_mapped();  // the generic path allocates at every op
  }
}

Trainer::~Trainer() = default;

void Trainer::sync_initial_parameters() {
  if (!dist_.active()) return;
  torch::NoGradGuard no_grad;
  for (auto& p : model_.parameters()) dist_.broadcast(p, 0);
}

double Trainer::train_epoch(int64_t epoch) {
  model_.train();
  model_.on_epoch_start(epoch);
  double sum = 0;
  if (fast_) {
    source_->start_epoch(epoch);
    sum = fast_->train_epoch();
  } else {
    // A model with several passes per epoch sees a new order in each: pass p of epoch e walks
    // the source's order number e · passes + p (one pass: the epoch's own order).
    const int64_t passes = std::max<int64_t>(model_.passes_per_epoch(), 1);
    torch::Tensor total = torch::zeros({}, device_.float_options());
    for (int64_t pass = 0; pass < passes; ++pass) {
      source_->start_epoch(epoch * passes + pass);
      model_.on_pass_start(pass);
      Progress progress(config_.get_bool("show_progress") && dist_.is_main(),
                        "Train " + std::to_string(epoch), source_->batches_per_epoch());
      data::Batch batch;
      int64_t b = 0;
      while (source_->next(batch)) {
        torch::Tensor loss = model_.train_step(device_.place(batch), *step_);
        device_.check(loss, model_.name(), "loss");
        total += loss.detach();
        progress.tick(++b);
      }
    }
    // One device→host sync per epoch rather than per batch.
    sum = total.item<double>();
  }
  if (std::isnan(sum)) throw nan_loss_error(model_.name(), epoch);
  model_.on_epoch_end(epoch);
  return sum;
}

void Trainer::save_checkpoint(const std::string& path) const {
  if (!dist_.is_main()) return;
  torch::serialize::OutputArchive archive;
  model_.save(archive);
  // Serialised in memory, then written by write_file_atomically: libtorch's file writer, on a
  // full disk, throws from a destructor and aborts the process (std::terminate).
  std::ostringstream bytes;
  archive.save_to(bytes);
  try {
    write_file_atomically(path, bytes.str(), "the checkpoint");
  } catch (const Error& e) {
    throw Error("checkpoint_dir: " + std::string(e.what()) +
                " (the previous checkpoint, if any, is kept)");
  }
}

namespace {

constexpr auto kBestWriteInterval = std::chrono::seconds(10);

// Every parameter and buffer of the model, in a fixed order.
std::vector<torch::Tensor> model_state(models::Model& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const torch::Tensor& b : model.buffers()) state.push_back(b);
  return state;
}

}  // namespace

void Trainer::keep_best() {
  if (!dist_.is_main()) return;
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> live = model_state(model_);
  if (best_state_.size() != live.size()) best_state_.assign(live.size(), torch::Tensor());
  for (size_t k = 0; k < live.size(); ++k) {
    if (best_state_[k].defined() && best_state_[k].sizes() == live[k].sizes() &&
        best_state_[k].device() == live[k].device())
      best_state_[k].copy_(live[k]);
    else
      best_state_[k] = live[k].clone();
  }
  best_unwritten_ = true;
  if (Clock::now() - last_best_write_ >= kBestWriteInterval) write_best();
}

void Trainer::write_best() {
  if (!best_unwritten_) return;
  // The model's own save() writes the file: put the best values into the model for that
  // moment, and the current ones back after.
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> live = model_state(model_);
  std::vector<torch::Tensor> current;
  current.reserve(live.size());
  for (size_t k = 0; k < live.size(); ++k) {
    current.push_back(live[k].clone());
    live[k].copy_(best_state_[k]);
  }
  auto restore = [&] {
    for (size_t k = 0; k < live.size(); ++k) live[k].copy_(current[k]);
  };
  try {
    save_checkpoint(checkpoint_path_);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  best_unwritten_ = false;
  last_best_write_ = Clock::now();
}

void Trainer::load_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error("checkpoint " + path + " does not exist");
  torch::serialize::InputArchive archive;
  archive.load_from(path, device_.device());
  model_.load(archive);
}

MetricValues Trainer::validate() {
  model_.before_evaluation();
  return evaluator_.evaluate(model_, splits_.valid, evaluator::Phase::kValid);
}

FitResult Trainer::fit() {
  FitResult result;
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

  if (model_.fitted_once()) {
    auto t0 = Clock::now();
    model_.fit();
    result.train_seconds.push_back(seconds_since(t0));
    log::info("fitted " + model_.name() + " [time: " + fixed(result.train_seconds.back(), 2) +
              "s]");
    result.epochs_run = 1;
    if (has_valid) {
      t0 = Clock::now();
      result.best_valid_result = validate();
      result.eval_seconds.push_back(seconds_since(t0));
      result.best_valid_score = pick(result.best_valid_result);
      log::info("evaluating [time: " + fixed(result.eval_seconds.back(), 2) +
                "s, valid_score: " + fixed(*result.best_valid_score, 6) + "]");
      log::info("valid result: \n" + evaluator::format_metrics(result.best_valid_result,
                                                               static_cast<int>(config_.get_int(
                                                                   "metric_decimal_place"))));
    }
    result.best_epoch = 0;
    save_checkpoint(checkpoint_path_);
    result.checkpoint_path = checkpoint_path_;
    dist_.barrier("checkpoint written");
    return result;
  }

  if (epochs == 0)
    log::warning("epochs is 0: the model is evaluated as initialised, without training");
  sync_initial_parameters();
  double best =
      bigger ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  int64_t cur_step = 0;
  try {
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      auto t0 = Clock::now();
      const double loss = train_epoch(epoch);
      result.train_seconds.push_back(seconds_since(t0));
      result.epochs_run = epoch + 1;
      log::info("epoch " + std::to_string(epoch) +
                " training [time: " + fixed(result.train_seconds.back(), 2) +
                "s, train loss: " + fixed(loss, loss_places) + "]");
      if (eval_step <= 0 || !has_valid) {
        keep_best();
        result.checkpoint_path = checkpoint_path_;
        result.best_epoch = epoch;
        continue;
      }
      if ((epoch + 1) % eval_step != 0) continue;
      t0 = Clock::now();
      MetricValues valid = validate();
      result.eval_seconds.push_back(seconds_since(t0));
      const double score = pick(valid);
      const bool improved = bigger ? score >= best : score <= best;  // ties improve (RecBole)
      if (improved) {
        best = score;
        cur_step = 0;
      } else {
        ++cur_step;
      }
      log::info("epoch " + std::to_string(epoch) + " evaluating [time: " +
                fixed(result.eval_seconds.back(), 2) + "s, valid_score: " + fixed(score, 6) + "]");
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
      if (cur_step > stopping_step) {
        log::info("Finished training, best eval result in epoch " +
                  std::to_string(epoch - cur_step * eval_step));
        break;
      }
    }
  } catch (...) {
    // The best model so far still reaches the checkpoint, as it would have at each improvement.
    try {
      write_best();
    } catch (...) {
    }
    throw;
  }
  write_best();
  // Other ranks must not read the checkpoint before rank 0 has renamed it into place.
  dist_.barrier("checkpoint written");
  return result;
}

MetricValues Trainer::test(bool load_best) {
  if (load_best && !checkpoint_path_.empty() && std::filesystem::exists(checkpoint_path_)) {
    log::info("Loading model structure and parameters from " + checkpoint_path_);
    load_checkpoint(checkpoint_path_);
  }
  model_.before_evaluation();
  return evaluator_.evaluate(model_, splits_.test, evaluator::Phase::kTest);
}

}  // namespace recbole::trainer

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
#include "recbole/evaluator/metrics.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
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
  const std::string learner = to_lower(config.get_string("learner"));
  const double lr = config.get_double("learning_rate");
  const double wd = config.get_double("weight_decay");
  if (learner == "adam")
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr).weight_decay(wd));
  if (learner == "adamw")
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr).weight_decay(wd));
  if (learner == "sgd")
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).weight_decay(wd));
  if (learner == "adagrad")
    return std::make_unique<torch::optim::Adagrad>(params, torch::optim::AdagradOptions(lr).weight_decay(wd));
  if (learner == "rmsprop")
    return std::make_unique<torch::optim::RMSprop>(params, torch::optim::RMSpropOptions(lr).weight_decay(wd));
  if (learner == "sparse_adam") {
    // libtorch's C++ API has no SparseAdam and our embeddings take dense gradients (as RecBole's
    // do, where sparse_adam then fails); Adam without weight decay is the closest honest choice.
    if (wd > 0) log::warning("learner sparse_adam ignores weight_decay, as in RecBole");
    log::warning("learner sparse_adam: dense embeddings; using Adam without weight decay");
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
  }
  throw ConfigError("learner: expected adam, adamw, sgd, adagrad, rmsprop or sparse_adam, got \"" +
                    learner + "\"");
}

// Rank 0's start time and pid name the checkpoint; other ranks receive them so that every rank
// agrees on the path.
std::string checkpoint_name(const config::Config& config, Dist& dist) {
  torch::Tensor stamp = torch::tensor({static_cast<int64_t>(std::time(nullptr)),
                                       static_cast<int64_t>(::getpid())}, torch::kInt64);
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

bool valid_metric_bigger(const std::string& valid_metric) {
  const std::string name = to_lower(valid_metric.substr(0, valid_metric.find('@')));
  return !(name == "mae" || name == "rmse" || name == "logloss" || name == "averagepopularity" ||
           name == "giniindex");
}

Trainer::Trainer(const config::Config& config, models::Model& model, const DeviceManager& device,
                 Dist& dist, const TrainData& data, const Evaluator& evaluator)
    : config_(config),
      model_(model),
      device_(device),
      dist_(dist),
      data_(data),
      evaluator_(evaluator),
      checkpoint_path_(checkpoint_name(config, dist)) {
  if (model_.kind() != models::ModelKind::kGradient) return;
  const YAML::Node neg = config_.node("train_neg_sample_args");
  const std::string dist_name = neg["distribution"] ? neg["distribution"].as<std::string>() : "none";
  int sample_num = 1;
  if (dist_name != "none") {
    // A batch holds train_batch_size // sample_num positives, each with sample_num negatives
    // (RecBole's rule). With sample_num above the batch size that would be one positive and
    // sample_num rows per batch: an allocation the user did not mean (24 GB at 10⁹).
    const int64_t wanted = neg["sample_num"].as<int64_t>();
    const int64_t batch = config_.get_int("train_batch_size");
    if (wanted > batch)
      throw ConfigError("train_neg_sample_args: sample_num " + std::to_string(wanted) +
                        " is larger than train_batch_size " + std::to_string(batch) +
                        "; expected sample_num <= train_batch_size (a batch holds "
                        "train_batch_size // sample_num positives, each with sample_num "
                        "negatives)");
    sample_num = static_cast<int>(wanted);
    std::vector<int64_t> counts(model_.n_items(), 0);
    for (int32_t i : data_.train_items) ++counts[i];
    sampler_ = std::make_unique<data::NegativeSampler>(
        data_.train, dist_name, neg["alpha"] ? neg["alpha"].as<double>() : 1.0, counts);
  }
  batcher_ = std::make_unique<data::TrainBatcher>(
      data_.train_users, data_.train_items, sampler_.get(), sample_num,
      config_.get_int("train_batch_size"), config_.get_bool("shuffle"),
      static_cast<uint64_t>(config_.get_int("seed")), dist_.rank(), dist_.world_size());
  if (sampler_ && fused_bpr_applicable(config_, model_, device_, dist_.world_size())) {
    using Update = FusedBprTrainer::Update;
    const Update update = *FusedBprTrainer::update_for(config_.get_string("learner"));
    const bool lazy = update == Update::kLazyAdam, sgd = update == Update::kSgd;
    const double wd = config_.get_double("weight_decay");
    if (lazy && wd > 0) log::warning("learner sparse_adam ignores weight_decay, as in RecBole");
    fused_ = std::make_unique<FusedBprTrainer>(dynamic_cast<models::BPR&>(model_), update,
                                               config_.get_double("learning_rate"), wd);
    const char* step = sgd ? (wd > 0 ? "SGD with weight decay on every row"
                                     : "SGD on the rows each batch uses")
                           : lazy ? "SparseAdam on the rows each batch uses"
                                  : "dense Adam";
    log::info(std::string("training path: fused BPR (sampling, gradient and ") + step + " on " +
              std::to_string(device_.cpu_threads()) +
              " threads; fast_bpr: false selects the generic autograd path)");
    const int64_t rows = model_.n_users() + model_.n_items();
    if (update == Update::kDenseAdam && rows > 20 * config_.get_int("train_batch_size"))
      log::info("learner adam updates all " + std::to_string(rows) +
                " embedding rows every batch; learner sparse_adam updates only the rows a batch "
                "uses and is much faster on tables this large");
  } else {
    optimizer_ = make_optimizer(config_, model_.parameters());
  }
}

void Trainer::sync_initial_parameters() {
  if (!dist_.active()) return;
  torch::NoGradGuard no_grad;
  for (auto& p : model_.parameters()) dist_.broadcast(p, 0);
}

void Trainer::average_gradients() { trainer::average_gradients(model_.parameters(), dist_); }

double Trainer::train_epoch(int64_t epoch) {
  model_.train();
  batcher_->start_epoch(epoch);
  if (fused_) {
    const double sum = fused_->train_epoch(*batcher_);
    if (std::isnan(sum))
      throw Error("Training loss is nan at epoch " + std::to_string(epoch) + " (model " +
                  model_.name() + "): lower learning_rate or set clip_grad_norm");
    return sum;
  }
  const bool clip = !config_.is_null("clip_grad_norm");
  double max_norm = 0, norm_type = 2;
  if (clip) {
    YAML::Node c = config_.node("clip_grad_norm");
    max_norm = c["max_norm"].as<double>();
    if (c["norm_type"]) norm_type = c["norm_type"].as<double>();
  }
  Progress progress(config_.get_bool("show_progress") && dist_.is_main(),
                    "Train " + std::to_string(epoch), batcher_->batches_per_epoch());
  data::PairBatch pb;
  torch::Tensor total = torch::zeros({}, device_.float_options());
  int64_t b = 0;
  while (batcher_->next(pb)) {
    models::TrainBatch batch;
    batch.users = device_.place(torch::from_blob(pb.users.data(), {pb.size()}, torch::kInt64).clone());
    batch.pos_items = device_.place(torch::from_blob(pb.pos_items.data(), {pb.size()}, torch::kInt64).clone());
    if (!pb.neg_items.empty())
      batch.neg_items = device_.place(torch::from_blob(pb.neg_items.data(), {pb.size()}, torch::kInt64).clone());
    optimizer_->zero_grad();
    torch::Tensor loss = model_.calculate_loss(batch);
    device_.check(loss, model_.name(), "loss");
    loss.backward();
    average_gradients();
    if (clip) torch::nn::utils::clip_grad_norm_(model_.parameters(), max_norm, norm_type);
    optimizer_->step();
    total += loss.detach();
    progress.tick(++b);
  }
  // One device→host sync per epoch rather than per batch.
  const double sum = total.item<double>();
  if (std::isnan(sum))
    throw Error("Training loss is nan at epoch " + std::to_string(epoch) + " (model " +
                model_.name() + "): lower learning_rate or set clip_grad_norm");
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
  if (!std::filesystem::exists(path))
    throw Error("checkpoint " + path + " does not exist");
  torch::serialize::InputArchive archive;
  archive.load_from(path, device_.device());
  model_.load(archive);
}

MetricValues Trainer::validate() {
  return evaluator_.evaluate(model_, data_.valid, data_.train, Phase::kValid);
}

FitResult Trainer::fit() {
  FitResult result;
  const int64_t epochs = config_.get_int("epochs");
  const int64_t eval_step = std::min(config_.get_int("eval_step"), std::max<int64_t>(epochs, 1));
  const int64_t stopping_step = config_.get_int("stopping_step");
  const std::string valid_metric = to_lower(config_.get_string("valid_metric"));
  const bool bigger = valid_metric_bigger(valid_metric);
  const bool has_valid = data_.valid.nnz() > 0;
  const int loss_places = static_cast<int>(config_.get_int("loss_decimal_place"));
  auto pick = [&](const MetricValues& values) {
    for (const auto& [k, v] : values)
      if (k == valid_metric) return v;
    throw ConfigError("valid_metric: \"" + config_.get_string("valid_metric") +
                      "\" is not among the computed metrics (metrics × topk): add it to metrics "
                      "or topk");
  };

  if (model_.kind() == models::ModelKind::kFitOnce) {
    auto t0 = Clock::now();
    model_.fit();
    result.train_seconds.push_back(seconds_since(t0));
    log::info("fitted " + model_.name() + " [time: " + fixed(result.train_seconds.back(), 2) + "s]");
    result.epochs_run = 1;
    if (has_valid) {
      t0 = Clock::now();
      result.best_valid_result = validate();
      result.eval_seconds.push_back(seconds_since(t0));
      result.best_valid_score = pick(result.best_valid_result);
      log::info("evaluating [time: " + fixed(result.eval_seconds.back(), 2) +
                "s, valid_score: " + fixed(*result.best_valid_score, 6) + "]");
      log::info("valid result: \n" +
                format_metrics(result.best_valid_result, static_cast<int>(config_.get_int("metric_decimal_place"))));
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
  double best = bigger ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  int64_t cur_step = 0;
  try {
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      auto t0 = Clock::now();
      const double loss = train_epoch(epoch);
      result.train_seconds.push_back(seconds_since(t0));
      result.epochs_run = epoch + 1;
      log::info("epoch " + std::to_string(epoch) + " training [time: " +
                fixed(result.train_seconds.back(), 2) + "s, train loss: " + fixed(loss, loss_places) + "]");
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
      log::info("valid result: \n" + format_metrics(valid, static_cast<int>(config_.get_int("metric_decimal_place"))));
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
  return evaluator_.evaluate(model_, data_.test, data_.train_valid, Phase::kTest);
}

}  // namespace recbole::trainer

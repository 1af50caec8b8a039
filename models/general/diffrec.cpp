#include "models/general/diffrec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "models/layers/autoencoder.h"
#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"

namespace recbole::models {
namespace {

constexpr double kInputDropout = 0.5;     // RecBole's DNN: fixed, not a key
constexpr double kUniformShare = 0.001;   // of the importance-sampling distribution
constexpr double kFirstFixedBeta = 1e-5;  // β_0 under beta_fixed

// [B] steps → [B, width] float32: cos(t f_k) then sin(t f_k), f_k = 10000^(−k / (width / 2)),
// a zero column when width is odd.
torch::Tensor timestep_embedding(const torch::Tensor& t, int64_t width) {
  const int64_t half = width / 2;
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(t.device());
  const torch::Tensor freqs =
      torch::exp(-std::log(10000.0) * torch::arange(half, options) / static_cast<double>(half));
  const torch::Tensor args = t.to(torch::kFloat32).unsqueeze(1) * freqs.unsqueeze(0);
  torch::Tensor emb = torch::cat({torch::cos(args), torch::sin(args)}, 1);
  if (width % 2) emb = torch::cat({emb, torch::zeros({t.size(0), 1}, options)}, 1);
  return emb;
}

// The schedule the keys describe; a ConfigError naming them when a β leaves (0, 1].
std::unique_ptr<layers::DiffusionSchedule> diffusion_schedule(const config::Config& c,
                                                              const std::string& model,
                                                              int64_t steps) {
  const std::string name = c.get_string("noise_schedule");
  std::vector<double> betas =
      layers::diffusion_betas(name, steps, c.get_double("noise_scale"), c.get_double("noise_min"),
                              c.get_double("noise_max"));
  if (c.get_bool("beta_fixed")) betas[0] = kFirstFixedBeta;
  for (size_t t = 0; t < betas.size(); ++t)
    if (!(betas[t] > 0.0 && betas[t] <= 1.0))
      throw ConfigError(
          c.source("noise_scale") + ": " + model + ": noise_scale, noise_min, noise_max: the " +
          name + " schedule gives beta_" + std::to_string(t) + " = " + std::to_string(betas[t]) +
          "; every beta must lie in (0, 1] (set noise_scale 0 for no noise)");
  return std::make_unique<layers::DiffusionSchedule>(std::move(betas));
}

}  // namespace

DiffRec::DiffRec(const ModelContext& ctx) : DiffRec(ctx, "DiffRec", ctx.n_items) {}

DiffRec::DiffRec(const ModelContext& ctx, const std::string& name, int64_t width)
    : Model(name, ctx),
      steps_(ctx.config.get_int("steps")),
      time_width_(keys::embedding_size().get(ctx.config)),
      sampling_steps_(ctx.config.get_int("sampling_steps")),
      history_per_step_(ctx.config.get_int("history_num_per_term")),
      predicts_x0_(ctx.config.get_string("mean_type") == "x0"),
      normalise_input_(ctx.config.get_bool("norm")),
      sampling_noise_(ctx.config.get_bool("sampling_noise")),
      time_aware_(ctx.config.get_bool("time-aware")) {
  const config::Config& c = ctx.config;
  if (sampling_steps_ > steps_)
    throw ConfigError(c.source("sampling_steps") + ": " + name +
                      ": sampling_steps: expected at most " + "steps (" + std::to_string(steps_) +
                      "), got " + std::to_string(sampling_steps_));
  const bool diffusing = c.get_double("noise_scale") != 0.0;
  if (diffusing) schedule_ = diffusion_schedule(c, name, steps_);
  if (sampling_steps_ > 0 && !diffusing)
    throw ConfigError(c.source("sampling_steps") + ": " + name +
                      ": sampling_steps: expected 0 when noise_scale is 0 (there is no forward "
                      "process to noise the rows with), got " +
                      std::to_string(sampling_steps_));
  // RecBole turns reweighting off without noise; the weights are 1 at t = 0 either way.
  reweight_ = diffusing && c.get_bool("reweight");
  step_weights_.assign(static_cast<size_t>(steps_), 1.0);
  if (reweight_)
    for (int64_t t = 1; t < steps_; ++t) {
      const auto& s = *schedule_;
      step_weights_[t] =
          predicts_x0_ ? s.snr(t - 1) - s.snr(t)
                       : (1.0 - s.alphas_cumprod[t]) /
                             (std::pow(1.0 - s.alphas_cumprod_prev[t], 2) * (1.0 - s.betas[t]));
    }

  std::vector<int64_t> sizes{width + time_width_};
  for (int64_t d : c.get_int_list("dims_dnn")) sizes.push_back(d);
  sizes.push_back(width);
  time_layer_ = register_module("time_layer", torch::nn::Linear(time_width_, time_width_));
  mlp_ = register_module(
      "mlp", layers::MLP(sizes, 0.0, c.get_string("mlp_act_func"), /*last_activation=*/false));
  layers::initialize(*this, layers::Init::kXavierNormal);
  if (time_aware_) build_time_weights(ctx);
  loss_history_ = torch::zeros({steps_, history_per_step_}, torch::kFloat64);
  loss_count_ = torch::zeros({steps_}, torch::kInt64);
  to(ctx.device.device());
}

void DiffRec::build_time_weights(const ModelContext& ctx) {
  const double w_min = ctx.config.get_double("w_min"), w_max = ctx.config.get_double("w_max");
  std::vector<std::vector<int64_t>> by_user(static_cast<size_t>(ctx.n_users));  // time order
  const data::TrainInteractions* inters = ctx.parts.find<data::TrainInteractions>();
  if (inters && inters->times) {
    const data::Split& train = inters->split;
    const std::vector<double>& times = *inters->times;
    // RecBole sorts the training interactions by time, stably, as float32.
    std::vector<int64_t> order(static_cast<size_t>(train.size()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return static_cast<float>(times[train.rows[a]]) < static_cast<float>(times[train.rows[b]]);
    });
    for (int64_t k : order) by_user[train.users[k]].push_back(train.items[k]);
  } else if (inters) {  // a run on a dataset without times (no split: a checkpoint's)
    throw ConfigError(ctx.config.source("time-aware") + ": " + name() +
                      ": time-aware: true needs the training interactions' times: a general-task "
                      "run on a dataset whose time field (" +
                      ctx.config.get_string("TIME_FIELD") + ") is loaded as a float column");
  }
  std::vector<int64_t> indptr{0}, items;
  std::vector<float> weights;
  for (auto& row : by_user) {
    const size_t n = row.size();
    std::map<int64_t, float> latest;  // an item seen twice keeps its later weight
    for (size_t j = 0; j < n; ++j)
      latest[row[j]] = static_cast<float>(
          n == 1 ? w_min : w_min + (w_max - w_min) * static_cast<double>(j) / (n - 1));
    for (const auto& [item, w] : latest) items.push_back(item), weights.push_back(w);
    indptr.push_back(static_cast<int64_t>(items.size()));
  }
  time_indptr_ = register_buffer("time_indptr", torch::tensor(indptr, torch::kInt64));
  time_items_ = register_buffer("time_items", torch::tensor(items, torch::kInt64));
  time_weights_ = register_buffer("time_weights", torch::tensor(weights, torch::kFloat32));
}

torch::Tensor DiffRec::rows(const data::Batch& batch) const {
  if (!time_aware_) return layers::user_rows(batch, train_, device_manager());
  const torch::Tensor& users = batch.users;  // on the model's device, as the buffers
  const torch::Tensor start = time_indptr_.index_select(0, users);
  const torch::Tensor length = time_indptr_.index_select(0, users + 1) - start;
  const torch::Tensor row = torch::repeat_interleave(length);
  // Position of each entry within its user's CSR run, then in the flat arrays.
  const torch::Tensor run_start = (length.cumsum(0) - length).index_select(0, row);
  const torch::Tensor flat =
      torch::arange(row.size(0), row.options()) - run_start + start.index_select(0, row);
  torch::Tensor x = torch::zeros({users.size(0), n_items()}, device_manager().float_options());
  x.index_put_({row, time_items_.index_select(0, flat)}, time_weights_.index_select(0, flat));
  // A history given for the padding user (serving an unseen user) is taken as given.
  if (batch.history.defined()) x = torch::where((users == 0).unsqueeze(1), batch.history, x);
  return x;
}

torch::Tensor DiffRec::per_row(const std::vector<double>& coefficient,
                               const torch::Tensor& t) const {
  return device_manager()
      .place(torch::tensor(coefficient, torch::kFloat64))
      .index_select(0, t)
      .to(torch::kFloat32)
      .unsqueeze(1);
}

torch::Tensor DiffRec::denoise(const torch::Tensor& x, const torch::Tensor& t) {
  const torch::Tensor emb = time_layer_->forward(timestep_embedding(t, time_width_));
  const torch::Tensor h = normalise_input_
                              ? layers::normalized_dropout(x, kInputDropout, is_training())
                              : layers::dropout(x, kInputDropout, is_training());
  return mlp_->forward(torch::cat({h, emb}, 1));
}

torch::Tensor DiffRec::diffuse(const torch::Tensor& x0, const torch::Tensor& t,
                               const torch::Tensor& noise) const {
  return per_row(schedule_->sqrt_alphas_cumprod, t) * x0 +
         per_row(schedule_->sqrt_one_minus_alphas_cumprod, t) * noise;
}

std::pair<torch::Tensor, torch::Tensor> DiffRec::sample_timesteps(int64_t rows) {
  const torch::Tensor rms = loss_history_.pow(2).mean(1).sqrt();
  // Uniform until every step has its record, or when every recorded loss is 0.
  if (!(loss_count_ == history_per_step_).all().item<bool>() || !(rms.sum().item<double>() > 0.0))
    return {torch::randint(0, steps_, {rows}, device_manager().long_options()),
            torch::ones({rows}, device_manager().float_options())};
  const torch::Tensor p =
      rms / rms.sum() * (1.0 - kUniformShare) + kUniformShare / static_cast<double>(steps_);
  const torch::Tensor t = torch::multinomial(p, rows, /*replacement=*/true);
  const torch::Tensor pt = p.index_select(0, t) * static_cast<double>(steps_);
  return {device_manager().place(t), device_manager().place(pt.to(torch::kFloat32))};
}

void DiffRec::record_losses(const torch::Tensor& t, const torch::Tensor& losses) {
  const torch::Tensor ts = DeviceManager::to_host(t);
  const torch::Tensor ls = DeviceManager::to_host(losses.detach()).to(torch::kFloat64);
  auto step = ts.accessor<int64_t, 1>();
  auto loss = ls.accessor<double, 1>();
  auto history = loss_history_.accessor<double, 2>();
  auto count = loss_count_.accessor<int64_t, 1>();
  for (int64_t r = 0; r < ts.size(0); ++r) {
    const int64_t s = step[r];
    if (count[s] == history_per_step_) {  // full: drop the oldest
      for (int64_t k = 0; k + 1 < history_per_step_; ++k) history[s][k] = history[s][k + 1];
      history[s][history_per_step_ - 1] = loss[r];
    } else {
      history[s][count[s]++] = loss[r];
    }
  }
}

DiffRec::DiffusionLoss DiffRec::diffusion_loss(const torch::Tensor& x0) {
  auto [t, pt] = sample_timesteps(x0.size(0));
  const torch::Tensor noise = torch::randn_like(x0);
  const torch::Tensor xt = schedule_ ? diffuse(x0, t, noise) : x0;
  const torch::Tensor out = denoise(xt, t);
  torch::Tensor loss = (out - (predicts_x0_ ? x0 : noise)).pow(2).mean(1);
  torch::Tensor x0_hat = out;
  if (!predicts_x0_ && schedule_) {
    x0_hat = per_row(schedule_->sqrt_recip_alphas_cumprod, t) * xt -
             per_row(schedule_->sqrt_recipm1_alphas_cumprod, t) * out;
    // RecBole's ε reweighting scores step 0 by the x₀ it implies, halved.
    if (reweight_) loss = torch::where(t == 0, (x0 - x0_hat).pow(2).mean(1) / 2.0, loss);
  }
  loss = loss * per_row(step_weights_, t).squeeze(1);
  record_losses(t, loss);
  return {(loss / pt).mean(), x0_hat};
}

torch::Tensor DiffRec::reverse_chain(torch::Tensor x) {
  const auto steps_of = [&](int64_t s) {
    return torch::full({x.size(0)}, s, device_manager().long_options());
  };
  if (sampling_steps_ > 0) x = diffuse(x, steps_of(sampling_steps_ - 1), torch::randn_like(x));
  for (int64_t s = steps_ - 1; s >= 0; --s) {
    const torch::Tensor out = denoise(x, steps_of(s));
    if (!schedule_) {
      x = out;
      continue;
    }
    const auto& d = *schedule_;
    const torch::Tensor x0_hat =
        predicts_x0_ ? out
                     : d.sqrt_recip_alphas_cumprod[s] * x - d.sqrt_recipm1_alphas_cumprod[s] * out;
    torch::Tensor mean = d.posterior_mean_coef1[s] * x0_hat + d.posterior_mean_coef2[s] * x;
    if (sampling_noise_ && s > 0)
      mean = mean + std::exp(0.5 * d.posterior_log_variance_clipped[s]) * torch::randn_like(x);
    x = mean;
  }
  return x;
}

torch::Tensor DiffRec::calculate_loss(const data::Batch& batch) {
  return diffusion_loss(rows(batch)).loss;
}

torch::Tensor DiffRec::full_sort_predict(const data::Batch& batch) {
  return reverse_chain(rows(batch));
}

void DiffRec::save_training_state(torch::serialize::OutputArchive& archive) const {
  archive.write("diffrec_loss_history", loss_history_);
  archive.write("diffrec_loss_count", loss_count_);
}

void DiffRec::load_training_state(torch::serialize::InputArchive& archive) {
  torch::Tensor history, count;
  archive.read("diffrec_loss_history", history);
  archive.read("diffrec_loss_count", count);
  loss_history_ = DeviceManager::to_host(history).clone();
  loss_count_ = DeviceManager::to_host(count).clone();
}

std::vector<config::KeyDecl> DiffRec::diffusion_keys() {
  using config::Key;
  using config::KeyType;
  return {
      Key("noise_schedule", KeyType::kString)
          .choices({"linear", "linear-var", "cosine", "binomial"})
          .help("How the noise grows over the steps"),
      Key("noise_scale", KeyType::kFloat)
          .min(0)
          .help("Scale of the linear schedules' noise; 0 turns the diffusion off"),
      Key("noise_min", KeyType::kFloat)
          .min(0)
          .help("Lower end of the linear schedules (× noise_scale)"),
      Key("noise_max", KeyType::kFloat)
          .min(0)
          .help("Upper end of the linear schedules (× noise_scale)"),
      Key("sampling_noise", KeyType::kBool)
          .help("Add the posterior's noise in the reverse chain when scoring"),
      Key("sampling_steps", KeyType::kInt)
          .min(0)
          .help("Noise the history to this step before scoring (0: start from the history; at most "
                "steps)"),
      Key("reweight", KeyType::kBool).help("Weight each step's loss by its SNR drop"),
      Key("mean_type", KeyType::kString)
          .choices({"x0", "eps"})
          .help("What the denoiser predicts: the clean row or the noise"),
      Key("steps", KeyType::kInt).min(1).help("Diffusion steps"),
      Key("history_num_per_term", KeyType::kInt)
          .min(1)
          .help("Losses recorded per step before timesteps are importance-sampled"),
      Key("beta_fixed", KeyType::kBool).help("Fix the first step's beta at 1e-5"),
      Key("dims_dnn", KeyType::kIntList).min(1).help("Hidden sizes of the denoiser"),
      keys::embedding_size().decl("Width of the timestep embedding"),
      Key("mlp_act_func", KeyType::kString)
          .choices(layers::activation_names())
          .help("Activation between the denoiser's layers"),
      Key("norm", KeyType::kBool).help("L2-normalise the input rows before the denoiser"),
      Key("time-aware", KeyType::kBool)
          .help("Weight a user's training interactions w_min … w_max in time order (T-DiffRec)"),
      Key("w_max", KeyType::kFloat).help("Weight of a user's latest interaction (time-aware)"),
      Key("w_min", KeyType::kFloat).help("Weight of a user's earliest interaction (time-aware)")};
}

RECBOLE_REGISTER_MODEL(DiffRec) {
  register_model({"DiffRec", "general", InputType::kUserRows,
                  "Diffusion model over user rows: a denoiser recovers the noised rows; scores by "
                  "the reverse chain",
                  DiffRec::diffusion_keys(),
                  [](const ModelContext& ctx) { return std::make_shared<DiffRec>(ctx); }});
}

}  // namespace recbole::models

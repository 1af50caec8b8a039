#include "models/general/bpr_fused.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <torch/torch.h>

#include "kernels/bpr_step.h"
#include "kernels/row_optimizers.h"
#include "recbole/config/config.h"
#include "recbole/config/learners.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/huge_pages.h"
#include "recbole/utils/text.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

bool fused_bpr_applicable(const config::Config& config, const BPR& model,
                          const DeviceManager& device, int world_size) {
  return fast_paths_enabled() && config.get_bool("fast_bpr") &&
         model.user_embedding().size(1) <= FusedBprTrainer::kMaxDim && !device.is_cuda() &&
         FusedBprTrainer::update_for(config.get_string("learner")).has_value() &&
         config.is_null("clip_grad_norm") && world_size == 1 && !config.get_bool("enable_amp");
}

std::optional<FusedBprTrainer::Update> FusedBprTrainer::update_for(const std::string& learner) {
  const std::optional<config::Learner> l = config::parse_learner(to_lower(learner));
  if (!l) return std::nullopt;
  switch (*l) {
    case config::Learner::kAdam:
      return Update::kDenseAdam;
    case config::Learner::kSparseAdam:
      return Update::kLazyAdam;
    case config::Learner::kSgd:
      return Update::kSgd;
    case config::Learner::kAdamW:
    case config::Learner::kAdagrad:
    case config::Learner::kRmsprop:
      break;
  }
  return std::nullopt;
}

namespace {

constexpr int64_t kSampleChunk = data::TrainBatcher::kNegChunk;  // samples per task of job A
static_assert(kSampleChunk <= kernels::bpr::kMaxChunk, "a task of job A is one score_chunk call");

}  // namespace

FusedBprTrainer::FusedBprTrainer(BPR& model, Update update, double learning_rate,
                                 double weight_decay, double stash_above_bytes)
    : model_(model), update_(update), lr_(learning_rate), wd_(weight_decay) {
  dim_ = model.user_embedding().size(1);
  auto init = [&](Table& t, const torch::Tensor& param) {
    t.param = param.data_ptr<float>();
    t.rows = param.size(0);
    const size_t n = static_cast<size_t>(param.numel());
    collapse_to_huge_pages(t.param, n * sizeof(float));
    if (update_ != Update::kSgd) {  // SGD keeps no moments
      resize_on_huge_pages(t.m, n);
      resize_on_huge_pages(t.v, n);
    }
    resize_on_huge_pages(t.slot, static_cast<size_t>(t.rows));
    std::fill(t.slot.begin(), t.slot.end(), -1);
  };
  init(users_, model.user_embedding());
  init(items_, model.item_embedding());
  const double table_bytes =
      static_cast<double>(users_.rows + items_.rows) * static_cast<double>(dim_) * sizeof(float);
  stash_ = table_bytes > stash_above_bytes;
}

void FusedBprTrainer::train_epoch(data::TrainBatcher& batcher, double& loss_sum,
                                  const std::function<bool()>& after_batch) {
  torch::NoGradGuard no_grad;
  // The model's tensors may have been replaced (a checkpoint load): take the pointers now.
  users_.param = model_.user_embedding().data_ptr<float>();
  items_.param = model_.item_embedding().data_ptr<float>();
  const float* U = users_.param;
  const float* I = items_.param;
  const int64_t d = dim_;
  const int workers = ThreadPool::instance().threads();
  scratch_.resize(static_cast<size_t>(workers));
  data::PairBatch pb;
  std::vector<double> chunk_loss;
  while (batcher.next_positives(pb)) {
    const int64_t b = pb.size();
    ++step_;
    // A: negatives, score differences, loss (and the stashes, for big tables).
    dx_.resize(static_cast<size_t>(b));
    if (stash_) {
      user_stash_.resize(static_cast<size_t>(b * d));
      diff_stash_.resize(static_cast<size_t>(b * d));
    }
    float* user_stash = stash_ ? user_stash_.data() : nullptr;
    float* diff_stash = stash_ ? diff_stash_.data() : nullptr;
    const int64_t chunks = (b + kSampleChunk - 1) / kSampleChunk;
    chunk_loss.assign(static_cast<size_t>(chunks), 0.0);
    const float inv_b = 1.f / static_cast<float>(b);
    parallel_for_blocks(b, kSampleChunk, [&](int64_t c, int64_t first, int64_t last) {
      batcher.sample_negatives(pb, c);
      chunk_loss[c] =
          kernels::bpr::score_chunk(U, I, pb.users.data(), pb.pos_items.data(), pb.neg_items.data(),
                                    first, last, d, inv_b, dx_.data(), user_stash, diff_stash);
    });
    double batch_loss = 0;
    for (double l : chunk_loss) batch_loss += l;  // in chunk order: thread-count independent
    loss_sum += batch_loss / static_cast<double>(b);

    // B: each worker's rows: gradients, then the optimizer step. The same rows on the same
    // core every batch, so their moments stay in its cache where they fit. Gathering from the
    // parameters, no worker may move a row before all have gathered: a barrier between.
    if (stash_) {
      ThreadPool::instance().run_per_worker([&](int w) {
        gather_owned_rows(w, workers, b, pb);
        update_owned_rows(w, workers);
      });
    } else {
      ThreadPool::instance().run_phases(2, [&](int w, int phase) {
        if (phase == 0)
          gather_owned_rows(w, workers, b, pb);
        else
          update_owned_rows(w, workers);
      });
    }
    if (after_batch()) return;
  }
}

namespace {

torch::Tensor vector_tensor(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kFloat32)
      .clone();
}

void read_vector(torch::serialize::InputArchive& archive, const std::string& key,
                 std::vector<float>& v) {
  torch::Tensor t;
  archive.read(key, t);
  if (t.numel() != static_cast<int64_t>(v.size()))
    throw Error("resume checkpoint: fused BPR state \"" + key + "\" holds " +
                std::to_string(t.numel()) + " values, expected " + std::to_string(v.size()));
  std::copy_n(t.contiguous().data_ptr<float>(), v.size(), v.data());
}

}  // namespace

void FusedBprTrainer::save(torch::serialize::OutputArchive& archive) const {
  archive.write("step", torch::tensor({step_}, torch::kInt64));
  if (update_ == Update::kSgd) return;
  archive.write("user_m", vector_tensor(users_.m));
  archive.write("user_v", vector_tensor(users_.v));
  archive.write("item_m", vector_tensor(items_.m));
  archive.write("item_v", vector_tensor(items_.v));
}

void FusedBprTrainer::load(torch::serialize::InputArchive& archive) {
  torch::Tensor step;
  archive.read("step", step);
  step_ = step.item<int64_t>();
  if (update_ == Update::kSgd) return;
  read_vector(archive, "user_m", users_.m);
  read_vector(archive, "user_v", users_.v);
  read_vector(archive, "item_m", items_.m);
  read_vector(archive, "item_v", items_.v);
}

void FusedBprTrainer::gather_owned_rows(int worker, int workers, int64_t b,
                                        const data::PairBatch& pb) {
  WorkerScratch& ws = scratch_[static_cast<size_t>(worker)];
  // At most one slot per contribution: b user rows and 2b item rows.
  ws.touched_users.resize(static_cast<size_t>(b));
  ws.touched_items.resize(static_cast<size_t>(2 * b));
  ws.user_grads.resize(static_cast<size_t>(b * dim_));
  ws.item_grads.resize(static_cast<size_t>(2 * b * dim_));
  // Room for one unconditional store past the last owned entry.
  ws.user_list.resize(static_cast<size_t>(b + 1));
  ws.item_list.resize(static_cast<size_t>(2 * b + 1));
  ws.users = {users_.slot.data(), ws.touched_users.data(), ws.user_grads.data(), 0};
  ws.items = {items_.slot.data(), ws.touched_items.data(), ws.item_grads.data(), 0};
  kernels::bpr::gather_gradients(worker, workers, users_.param, items_.param, pb.users.data(),
                                 pb.pos_items.data(), pb.neg_items.data(), b, dx_.data(),
                                 stash_ ? user_stash_.data() : nullptr,
                                 stash_ ? diff_stash_.data() : nullptr, dim_, ws.users, ws.items,
                                 ws.user_list.data(), ws.item_list.data());
}

void FusedBprTrainer::update_owned_rows(int worker, int workers) {
  namespace bpr = kernels::bpr;
  constexpr int64_t kBlock = bpr::kRowBlock;
  WorkerScratch& ws = scratch_[static_cast<size_t>(worker)];
  const double bc1 = 1.0 - std::pow(beta1_, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(beta2_, static_cast<double>(step_));
  kernels::AdamConsts c;
  c.b1 = static_cast<float>(beta1_);
  c.b2 = static_cast<float>(beta2_);
  c.eps = static_cast<float>(eps_);
  // The dense updates visit every row the worker owns (bpr::owns_row), block by block.
  const int64_t first = kBlock * static_cast<int64_t>(worker), stride = kBlock * workers;
  if (update_ == Update::kSgd) {
    const float lr = static_cast<float>(lr_), wd = static_cast<float>(wd_);
    for (auto [tab, g] : {std::pair{&users_, &ws.users}, std::pair{&items_, &ws.items}}) {
      if (wd == 0.f) {
        bpr::sgd_sparse_update(tab->param, g->touched, g->n_touched, g->grads, dim_, lr);
        continue;
      }
      for (int64_t lo = first; lo < tab->rows; lo += stride)
        bpr::sgd_dense_update(tab->param, tab->slot.data(), lo, std::min(tab->rows, lo + kBlock),
                              g->grads, dim_, lr, wd);
    }
  } else if (update_ == Update::kDenseAdam) {
    c.wd = static_cast<float>(wd_);
    c.step_size = static_cast<float>(lr_ / bc1);
    c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    for (auto [tab, g] : {std::pair{&users_, &ws.users}, std::pair{&items_, &ws.items}}) {
      for (int64_t lo = first; lo < tab->rows; lo += stride)
        bpr::dense_adam_update(tab->param, tab->m.data(), tab->v.data(), tab->slot.data(), lo,
                               std::min(tab->rows, lo + kBlock), g->grads, dim_, c);
    }
  } else {
    c.wd = 0.f;  // SparseAdam has no weight decay (RecBole ignores it for sparse_adam too)
    c.step_size = static_cast<float>(lr_ * std::sqrt(bc2) / bc1);
    c.inv_sqrt_bc2 = 1.f;
    for (auto [tab, g] : {std::pair{&users_, &ws.users}, std::pair{&items_, &ws.items}})
      bpr::lazy_adam_update(tab->param, tab->m.data(), tab->v.data(), g->touched, g->n_touched,
                            g->grads, dim_, c);
  }
  // The slots are free again for the next step (gather_gradients expects −1).
  for (auto [tab, g] : {std::pair{&users_, &ws.users}, std::pair{&items_, &ws.items}})
    for (int64_t k = 0; k < g->n_touched; ++k) tab->slot[static_cast<size_t>(g->touched[k])] = -1;
}

}  // namespace recbole::models

#include "tasks/sequential/sequential_pipeline.h"

#include <numeric>
#include <string>

#include <torch/torch.h>

#include "models/layers/sequence.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "tasks/dynamic_negatives.h"

namespace recbole::tasks {
namespace {

data::InteractionMatrix targets_matrix(int64_t n_rows, int64_t n_items,
                                       const std::vector<int32_t>& targets) {
  std::vector<int32_t> rows(targets.size());
  std::iota(rows.begin(), rows.end(), 0);
  return data::InteractionMatrix(n_rows, n_items, rows, targets);
}

// Walks the training samples with the pairwise batcher: its "users" are sample indices and its
// "items" the targets, so that the sampler's exclusion row of a sample is its own target alone
// (RecBole's RepeatableSampler rule: history items may be negatives).
class NextItemSource : public TrainingSource {
 public:
  NextItemSource(const data::SequenceStore& store, int64_t n_items,
                 const std::vector<int64_t>& item_count, const SourceSettings& s)
      : store_(store), ids_(static_cast<size_t>(store.train().size())) {
    std::iota(ids_.begin(), ids_.end(), 0);
    if (s.negatives.enabled()) {
      exclude_ = targets_matrix(store.train().size(), n_items, store.train().targets);
      sampler_ = std::make_unique<data::NegativeSampler>(exclude_, s.negatives.distribution,
                                                         s.negatives.alpha, item_count);
    }
    batcher_ = std::make_unique<data::TrainBatcher>(ids_, store.train().targets, sampler_.get(),
                                                    s.negatives.sample_num, s.batch_size, s.shuffle,
                                                    s.seed, s.rank, s.world_size);
    if (s.negatives.dynamic())
      dynamic_ = std::make_unique<DynamicNegatives>(s.negatives.candidate_num);
  }

  void start_epoch(int64_t epoch) override { batcher_->start_epoch(epoch); }
  bool next(data::Batch& batch) override {
    if (!batcher_->next(pairs_)) return false;
    if (dynamic_) {
      // A candidate is scored after its sample's own input sequence, as the target would be.
      dynamic_->pick(
          pairs_, *sampler_, batcher_->batch_key(),
          [this](const std::vector<int64_t>& samples, const std::vector<int64_t>& items) {
            data::Batch input = sequence_batch(store_, store_.train(), samples);
            input.items = data::id_tensor(items);
            return input;
          });
    }
    batch = sequence_batch(store_, store_.train(), pairs_.users);
    if (!pairs_.neg_items.empty()) batch.neg_items = data::id_tensor(pairs_.neg_items);
    return true;
  }
  int64_t batches_per_epoch() const override { return batcher_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { batcher_->skip(n); }
  bool set_candidate_scorer(CandidateScorer scorer) override {
    if (!dynamic_) return false;
    dynamic_->set_scorer(std::move(scorer));
    return true;
  }

 private:
  const data::SequenceStore& store_;
  std::vector<int32_t> ids_;
  data::InteractionMatrix exclude_;
  std::unique_ptr<data::NegativeSampler> sampler_;
  std::unique_ptr<data::TrainBatcher> batcher_;
  std::unique_ptr<DynamicNegatives> dynamic_;  // null with static sampling
  data::PairBatch pairs_;
};

std::vector<int64_t> target_counts(const data::SequenceSamples& samples, int64_t n_items) {
  std::vector<int64_t> counts(static_cast<size_t>(n_items), 0);
  for (int32_t i : samples.targets) ++counts[static_cast<size_t>(i)];
  return counts;
}

std::vector<int32_t> users_of(const data::SequenceSamples& s) { return s.users; }

void check_repeatable(const config::Config& config) {
  if (!config.get_bool("repeatable"))
    throw ConfigError(config.source("repeatable") +
                      ": repeatable: sequential models rank every item, history included "
                      "(RecBole requires it); expected true");
}

void log_split(const data::SequenceStore& s) {
  log::info("sequential samples (one per interaction but each user's first, inputs of at most " +
            std::to_string(s.max_len()) + " items): train " + std::to_string(s.train().size()) +
            ", valid " + std::to_string(s.valid().size()) + ", test " +
            std::to_string(s.test().size()));
  const auto& su = s.short_users();
  if (su.one + su.two + su.three > 0)
    log::info("users with fewer than 4 interactions: " + std::to_string(su.one) +
              " with 1 (no sample), " + std::to_string(su.two) + " with 2 (a training sample " +
              "only), " + std::to_string(su.three) + " with 3 (no valid sample under LS)");
}

}  // namespace

data::Batch sequence_batch(const data::SequenceStore& store, const data::SequenceSamples& samples,
                           const std::vector<int64_t>& rows) {
  const int64_t b = static_cast<int64_t>(rows.size());
  const int64_t L = store.max_len();
  data::Batch batch;
  batch.columns[models::layers::kItemSeq] = torch::empty({b, L}, torch::kInt64);
  batch.columns[models::layers::kItemSeqLen] = torch::empty({b}, torch::kInt64);
  batch.users = torch::empty({b}, torch::kInt64);
  batch.items = torch::empty({b}, torch::kInt64);
  int64_t* seq = batch.column(models::layers::kItemSeq).data_ptr<int64_t>();
  int64_t* len = batch.column(models::layers::kItemSeqLen).data_ptr<int64_t>();
  int64_t* users = batch.users.data_ptr<int64_t>();
  int64_t* items = batch.items.data_ptr<int64_t>();
  for (int64_t r = 0; r < b; ++r) {
    const size_t k = static_cast<size_t>(rows[r]);
    users[r] = samples.users[k];
    items[r] = samples.targets[k];
    len[r] = store.write_input(samples.users[k], samples.positions[k], seq + r * L);
  }
  return batch;
}

SequenceRankingSource::SequenceRankingSource(const data::SequenceStore& store,
                                             const data::SequenceSamples& samples, int64_t n_items)
    : store_(store),
      samples_(samples),
      rows_(static_cast<size_t>(samples.size())),
      positives_(targets_matrix(samples.size(), n_items, samples.targets)) {
  std::iota(rows_.begin(), rows_.end(), 0);
}

data::Batch SequenceRankingSource::batch(const std::vector<int64_t>& rows) const {
  return sequence_batch(store_, samples_, rows);
}

std::unique_ptr<TrainingSource> make_next_item_source(const data::SequenceStore& store,
                                                      int64_t n_items,
                                                      const std::vector<int64_t>& item_count,
                                                      const SourceSettings& settings) {
  return std::make_unique<NextItemSource>(store, n_items, item_count, settings);
}

SequentialPipeline::SequentialPipeline(const config::Config& config, const data::Dataset& dataset)
    : SequentialPipeline(config,
                         (check_repeatable(config),
                          data::SequenceStore::build(dataset, dataset.options(),
                                                     config.get_int("MAX_ITEM_LIST_LENGTH"))),
                         dataset.n_users(), dataset.n_items()) {
  log_split(store_);
}

SequentialPipeline::SequentialPipeline(const config::Config& config, data::SequenceStore store,
                                       int64_t n_users, int64_t n_items)
    : config_(config),
      store_(std::move(store)),
      n_users_(n_users),
      n_items_(n_items),
      train_(n_users, n_items, users_of(store_.train()), store_.train().targets),
      item_count_(target_counts(store_.train(), n_items)),
      valid_source_(store_, store_.valid(), n_items),
      test_source_(store_, store_.test(), n_items) {
  check_repeatable(config);
}

models::ModelContext SequentialPipeline::model_context(const DeviceManager& device) const {
  models::ModelContext ctx{config_, n_users_, n_items_, train_, device};
  ctx.preload_weights = preload_weights_;
  return ctx;
}

std::unique_ptr<TrainingSource> SequentialPipeline::training_source(models::InputType input,
                                                                    const std::string& model,
                                                                    int rank,
                                                                    int world_size) const {
  if (input != models::InputType::kNextItem && input != models::InputType::kPairwise)
    throw ConfigError(model + ": the sequential task has no training source for input type \"" +
                      std::string(models::input_type_name(input)) + "\"");
  SourceSettings settings = source_settings_from_config(config_, rank, world_size);
  // The model's input type says whether it trains on pairs (a BPR loss).
  const bool bpr = input == models::InputType::kPairwise;
  const std::string where = config_.source("train_neg_sample_args");
  if (bpr) {
    if (!settings.negatives.enabled())
      throw ConfigError(where + ": train_neg_sample_args: " + model +
                        " trains with the BPR loss, which needs a sampled negative per sample; "
                        "expected e.g. {distribution: uniform, sample_num: 1}, got null");
  } else if (settings.negatives.enabled()) {
    // RecBole refuses a CE-loss sequential model with negative sampling, even its own default;
    // here the default gives way (what RecBole's docs and tests configure by hand).
    if (where.rfind("configs/overall.yaml", 0) != 0)
      throw ConfigError(where + ": train_neg_sample_args: " + model +
                        " trains with the CE loss over every item, so no negatives are sampled; "
                        "expected null (~), or loss_type: BPR");
    log::info(model +
              ": loss_type CE scores every item: no training negatives are sampled "
              "(train_neg_sample_args is ignored)");
    settings.negatives = NegativeSampling{};
  }
  return make_next_item_source(store_, n_items_, item_count_, settings);
}

}  // namespace recbole::tasks

#include "tasks/context/context_pipeline.h"

#include <algorithm>
#include <numeric>

#include "recbole/config/config.h"
#include "recbole/config/eval_mode.h"
#include "recbole/config/metric_registry.h"
#include "recbole/data/dataset.h"
#include "recbole/data/discretisation.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/splitmix.h"

namespace recbole::tasks {
namespace {

// [n, L] of a sequence column, right-padded: L = the longest row (at least 1).
int64_t longest(const data::Column& c) {
  int64_t l = 0;
  for (size_t r = 0; r + 1 < c.offsets.size(); ++r)
    l = std::max(l, c.offsets[r + 1] - c.offsets[r]);
  return l;
}

// Whether eval_args.mode ranks items (full, uniN, popN) in `phase` ("valid" or "test").
bool ranks_items(const config::Config& config, const char* phase) {
  const YAML::Node mode = config.node("eval_args")["mode"];
  return mode && mode.IsMap() && config::EvalMode::parse(mode[phase].as<std::string>())->ranking();
}

// Ranking metrics need a ranking mode (RecBole crashes at the first validation otherwise).
void check_context_config(const config::Config& config) {
  if (!ranks_items(config, "valid") || !ranks_items(config, "test"))
    for (const std::string& m : config.get_string_list("metrics")) {
      const evaluator::MetricInfo* row = evaluator::find_metric(m);
      if (row && row->is_ranking() && row->kind != evaluator::MetricKind::kRank)
        throw ConfigError(config.source("metrics") + ": metrics: " + row->name +
                          " is a ranking metric; the labeled mode of the context task computes " +
                          evaluator::join_names(evaluator::value_metric_names()) +
                          " and GAUC (rank every item with eval_args mode full, uniN or popN)");
    }
}

// Largest `bucket` of an equal-width discretisation: each bucket is a row of the field's table.
constexpr int64_t kMaxBuckets = 1'000'000;

// The `discretization` map {field: {method: ED, bucket: k} | {method: LD}} by field; each field
// must be one of the numerical features.
std::map<std::string, data::Discretisation> discretisations(
    const config::Config& config, const std::vector<std::string>& numerical) {
  std::map<std::string, data::Discretisation> out;
  if (config.is_null("discretization")) return out;
  const std::string where = config.source("discretization") + ": discretization.";
  for (const auto& entry : config.node("discretization")) {
    const std::string field = entry.first.as<std::string>(), at = where + field;
    if (std::find(numerical.begin(), numerical.end(), field) == numerical.end())
      throw ConfigError(at + ": " + field +
                        " is not in numerical_features; only numerical float and float_seq "
                        "features are bucketed (add it there)");
    const YAML::Node& spec = entry.second;
    if (!spec.IsMap() || !spec["method"])
      throw ConfigError(at + ": expected {method: ED, bucket: k} or {method: LD}");
    for (const auto& key : spec)
      if (key.first.as<std::string>() != "method" && key.first.as<std::string>() != "bucket")
        throw ConfigError(at + ": unknown key " + key.first.as<std::string>() +
                          "; expected method and bucket");
    data::Discretisation d;
    d.method = data::parse_discretisation_method(spec["method"].as<std::string>(), at);
    if (d.method == data::DiscretisationMethod::kEqualWidth) {
      const YAML::Node bucket = spec["bucket"];
      int64_t k = 0;
      if (!bucket || !bucket.IsScalar() || !YAML::convert<int64_t>::decode(bucket, k) || k < 1 ||
          k > kMaxBuckets)
        throw ConfigError(at + ".bucket: " + (bucket ? YAML::Dump(bucket) : "missing") +
                          "; ED needs the number of buckets, an integer in [1, " +
                          std::to_string(kMaxBuckets) + "]");
      d.buckets = k;
    }
    out.emplace(field, d);
  }
  return out;
}

}  // namespace

void FeatureColumns::add(const data::FeatureSpec& spec, const data::Column& c,
                         const std::vector<int64_t>& buckets) {
  const int64_t n = c.size();
  if (spec.discretised && buckets.size() != c.floats.size())
    throw Error("context features: " + spec.name + " has " + std::to_string(buckets.size()) +
                " bucket ids for " + std::to_string(c.floats.size()) + " values");
  torch::Tensor t;
  switch (spec.type) {
    case data::FieldType::kToken: {
      t = torch::empty({n}, torch::kInt64);
      int64_t* p = t.data_ptr<int64_t>();
      for (int64_t r = 0; r < n; ++r) p[r] = c.tokens[r];
      break;
    }
    case data::FieldType::kFloat: {
      if (spec.discretised) {
        t = torch::tensor(buckets, torch::kInt64);
        break;
      }
      t = torch::empty({n}, torch::kFloat32);
      float* p = t.data_ptr<float>();
      for (int64_t r = 0; r < n; ++r) p[r] = static_cast<float>(c.floats[r]);
      break;
    }
    case data::FieldType::kTokenSeq: {
      t = torch::zeros({n, spec.seq_len}, torch::kInt64);
      int64_t* p = t.data_ptr<int64_t>();
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = c.offsets[r]; j < c.offsets[r + 1]; ++j)
          p[r * spec.seq_len + (j - c.offsets[r])] = c.tokens[j];
      break;
    }
    case data::FieldType::kFloatSeq: {
      t = torch::zeros({n, spec.seq_len, 2}, torch::kFloat32);
      float* p = t.data_ptr<float>();
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = c.offsets[r]; j < c.offsets[r + 1]; ++j) {
          float* cell = p + (r * spec.seq_len + (j - c.offsets[r])) * 2;
          const auto at = static_cast<size_t>(j);
          cell[0] = spec.discretised ? 1.0f : static_cast<float>(c.floats[at]);
          cell[1] = spec.discretised ? static_cast<float>(buckets[at]) : 1.0f;
        }
      break;
    }
  }
  columns_.emplace_back(spec.name, std::move(t));
}

void FeatureColumns::gather(const torch::Tensor& index,
                            std::map<std::string, torch::Tensor>& out) const {
  for (const auto& [name, t] : columns_) out[name] = t.index_select(0, index);
}

data::Batch ContextRows::batch(const std::vector<int64_t>& rows,
                               const std::vector<int64_t>* row_items,
                               const std::vector<float>* row_labels) const {
  const int64_t b = static_cast<int64_t>(rows.size());
  data::Batch out;
  out.users = torch::empty({b}, torch::kInt64);
  out.items = torch::empty({b}, torch::kInt64);
  out.labels = torch::empty({b}, torch::kFloat32);
  int64_t* u = out.users.data_ptr<int64_t>();
  int64_t* i = out.items.data_ptr<int64_t>();
  float* l = out.labels.data_ptr<float>();
  for (int64_t k = 0; k < b; ++k) {
    const size_t r = static_cast<size_t>(rows[k]);
    u[k] = users[r];
    i[k] = row_items ? (*row_items)[static_cast<size_t>(k)] : items[r];
    l[k] = row_labels ? (*row_labels)[static_cast<size_t>(k)] : labels[r];
  }
  add_user_features(uid_field, user_features, out);
  out.features[iid_field] = out.items;
  item_features.gather(out.items, out.features);
  if (!inter_features.empty()) inter_features.gather(data::id_tensor(rows), out.features);
  return out;
}

void add_user_features(const std::string& uid_field, const FeatureColumns& user_features,
                       data::Batch& batch) {
  batch.features[uid_field] = batch.users;
  user_features.gather(batch.users, batch.features);
}

data::Batch ContextRankingSource::batch(const std::vector<int64_t>& rows) const {
  data::Batch out = UserRankingSource::batch(rows);
  add_user_features(rows_.uid_field, rows_.user_features, out);
  return out;
}

data::Batch ContextLabeledSource::batch(int64_t k) const {
  const int64_t n = static_cast<int64_t>(split_rows_.size());
  const int64_t lo = k * batch_size_, hi = std::min(n, lo + batch_size_);
  return rows_.batch(std::vector<int64_t>(split_rows_.begin() + lo, split_rows_.begin() + hi));
}

ContextTrainingSource::ContextTrainingSource(const ContextRows& rows,
                                             const std::vector<int64_t>& train_rows,
                                             const SourceSettings& settings,
                                             const data::InteractionMatrix& train,
                                             const std::vector<int64_t>& item_count)
    : rows_(rows), train_rows_(train_rows), settings_(settings) {
  settings_.batch_size = std::max<int64_t>(settings_.batch_size, 1);
  if (settings_.negatives.enabled()) {
    sample_num_ = std::max(settings_.negatives.sample_num, 1);
    sampler_ = std::make_unique<data::NegativeSampler>(train, settings_.negatives.distribution,
                                                       settings_.negatives.alpha, item_count);
    if (settings_.negatives.dynamic())
      dynamic_ = std::make_unique<DynamicNegatives>(settings_.negatives.candidate_num);
  }
  originals_ = std::max<int64_t>(settings_.batch_size / (1 + sample_num_), 1);
}

void ContextTrainingSource::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  order_.resize(train_rows_.size());
  std::iota(order_.begin(), order_.end(), 0);
  if (settings_.shuffle) {
    // Fisher-Yates from one stream per (seed, epoch): the same order on every rank.
    data::Rng rng(settings_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(epoch) + 1);
    for (size_t k = order_.size(); k > 1; --k) std::swap(order_[k - 1], order_[rng.below(k)]);
  }
  next_ = 0;
}

bool ContextTrainingSource::next(data::Batch& batch) {
  const int64_t n = static_cast<int64_t>(order_.size());
  if (next_ >= n) return false;
  const int64_t hi = std::min(n, next_ + originals_);
  std::vector<int64_t> rows, positions;
  rows.reserve(static_cast<size_t>(hi - next_));
  // Row p - next_ of the batch goes to rank (p - next_) % world_size.
  for (int64_t p = next_ + settings_.rank; p < hi; p += settings_.world_size) {
    rows.push_back(train_rows_[static_cast<size_t>(order_[p])]);
    positions.push_back(p);
  }
  next_ = hi;
  if (!sampler_) {
    batch = rows_.batch(rows);
    return true;
  }
  // [the rows, labelled 1; sample_num blocks of the same rows with a negative item, labelled 0]
  const size_t b = rows.size();
  std::vector<int64_t> all_rows, items;
  std::vector<float> labels(b, 1.0f);
  labels.resize(b * (1 + static_cast<size_t>(sample_num_)), 0.0f);
  all_rows.reserve(labels.size());
  items.reserve(labels.size());
  for (size_t k = 0; k < b; ++k) {
    all_rows.push_back(rows[k]);
    items.push_back(rows_.items[static_cast<size_t>(rows[k])]);
  }
  // One stream per row, keyed by (seed, epoch, position in the epoch).
  std::vector<uint64_t> row_keys;
  std::vector<data::Rng> streams;
  row_keys.reserve(b);
  streams.reserve(b);
  const uint64_t epoch_key =
      splitmix64_hash(settings_.seed) ^ splitmix64_hash(static_cast<uint64_t>(epoch_) + 0x5eedULL);
  for (size_t k = 0; k < b; ++k) {
    row_keys.push_back(epoch_key ^ splitmix64_hash(~static_cast<uint64_t>(positions[k])));
    streams.emplace_back(row_keys.back());
  }
  for (int j = 0; j < sample_num_; ++j)
    for (size_t k = 0; k < b; ++k) {
      all_rows.push_back(rows[k]);
      items.push_back(sampler_->sample(rows_.users[static_cast<size_t>(rows[k])], streams[k]));
    }
  if (dynamic_) pick_dynamic(row_keys, all_rows, items);
  batch = rows_.batch(all_rows, &items, &labels);
  return true;
}

void ContextTrainingSource::pick_dynamic(const std::vector<uint64_t>& row_keys,
                                         const std::vector<int64_t>& all_rows,
                                         std::vector<int64_t>& items) const {
  // The negative slots are all_rows[b..]; candidate 0 of a slot is its static draw, the others
  // come from a second stream of its row, so that the static draws stay as they are.
  const size_t b = row_keys.size(), n = all_rows.size() - b;
  const auto c = static_cast<size_t>(dynamic_->candidate_num());
  std::vector<data::Rng> extra;
  extra.reserve(b);
  for (uint64_t key : row_keys) extra.emplace_back(key ^ 0xd1b54a32d192ed03ULL);
  std::vector<int64_t> slot_rows(n * c), candidates(n * c);
  for (size_t k = 0; k < c; ++k)
    for (size_t j = 0; j < n; ++j) {
      const int64_t row = all_rows[b + j];
      slot_rows[k * n + j] = row;
      candidates[k * n + j] =
          k == 0 ? items[b + j]
                 : sampler_->sample(rows_.users[static_cast<size_t>(row)], extra[j % b]);
    }
  const std::vector<int64_t> kept = dynamic_->best(candidates, rows_.batch(slot_rows, &candidates));
  std::copy(kept.begin(), kept.end(), items.begin() + static_cast<std::ptrdiff_t>(b));
}

bool ContextTrainingSource::set_candidate_scorer(CandidateScorer scorer) {
  if (!dynamic_) return false;
  dynamic_->set_scorer(std::move(scorer));
  return true;
}

int64_t ContextTrainingSource::batches_per_epoch() const {
  return (static_cast<int64_t>(train_rows_.size()) + originals_ - 1) / originals_;
}

ContextPipeline::ContextPipeline(const config::Config& config, const data::Dataset& dataset,
                                 const data::SplitDataset& split)
    : config_(config),
      split_(split),
      n_users_(dataset.n_users()),
      n_items_(dataset.n_items()),
      rows_{dataset.inter_users(),
            dataset.inter_items(),
            labels_,
            user_features_,
            item_features_,
            inter_features_,
            dataset.options().uid_field,
            dataset.options().iid_field},
      train_(dataset.n_users(), dataset.n_items(), split.train.users, split.train.items),
      item_count_(static_cast<size_t>(dataset.n_items()), 0) {
  check_context_config(config);
  const bool rank_valid = ranks_items(config, "valid"), rank_test = ranks_items(config, "test");
  if (rank_valid || rank_test) {
    valid_items_ =
        data::InteractionMatrix(n_users_, n_items_, split.valid.users, split.valid.items);
    test_items_ = data::InteractionMatrix(n_users_, n_items_, split.test.users, split.test.items);
    train_valid_ = data::InteractionMatrix::merge(train_, valid_items_);
  }
  // A split's ranking source (positives, history mask) or its labelled rows.
  auto source = [&](bool ranks, const data::InteractionMatrix& positives,
                    const data::InteractionMatrix* mask,
                    const std::vector<int64_t>& rows) -> std::unique_ptr<tasks::EvaluationSource> {
    if (ranks) return std::make_unique<ContextRankingSource>(rows_, positives, mask);
    return std::make_unique<ContextLabeledSource>(rows_, rows, config.get_int("eval_batch_size"));
  };
  // Validation masks the training items; the test masks train and valid.
  valid_source_ = source(rank_valid, valid_items_, &train_, split.valid.rows);
  test_source_ = source(rank_test, test_items_, &train_valid_, split.test.rows);
  const data::DatasetOptions& opt = dataset.options();
  const data::Table& inter = dataset.inter_table();
  if (!inter.has(opt.label_field) || inter.column(opt.label_field).type != data::FieldType::kFloat)
    throw DataError(inter.source() + ": no label column " + opt.label_field +
                    " (float); context models train on labelled rows: set threshold (e.g. "
                    "{rating: 4}) or give the .inter file a " +
                    opt.label_field + ":float column");
  for (double v : inter.column(opt.label_field).floats) labels_.push_back(static_cast<float>(v));
  for (int32_t i : split.train.items) ++item_count_[static_cast<size_t>(i)];

  const std::vector<std::string> numerical = config.get_string_list("numerical_features");
  for (const std::string& name : numerical) {
    bool found = false;
    for (const data::Table* t : {&inter, dataset.user_table(), dataset.item_table()})
      if (t && t->has(name)) {
        found = true;
        if (!t->column(name).is_float_like())
          throw ConfigError(config.source("numerical_features") + ": numerical_features: " + name +
                            " is a " + data::field_type_name(t->column(name).type) + " field of " +
                            t->source() + "; expected float or float_seq fields");
      }
    if (!found)
      throw ConfigError(config.source("numerical_features") +
                        ": numerical_features: no loaded "
                        "field " +
                        name + " (loaded: " +
                        [&] {
                          std::string s;
                          for (const std::string& f : dataset.field_names())
                            s += (s.empty() ? "" : ", ") + f;
                          return s;
                        }() +
                        ")");
  }
  const std::map<std::string, data::Discretisation> bucketing = discretisations(config, numerical);
  schema_.uid_field = opt.uid_field;
  schema_.iid_field = opt.iid_field;
  for (const std::string& name : dataset.field_names()) {
    if (name == opt.label_field || dataset.is_unused_inter_field(name)) continue;
    data::FeatureSpec spec;
    spec.name = name;
    const data::Table* table = nullptr;
    FeatureColumns* store = nullptr;
    if (name == opt.uid_field) {
      spec.side = data::FeatureSide::kUser;
      table = &inter;
    } else if (name == opt.iid_field) {
      spec.side = data::FeatureSide::kItem;
      table = &inter;
    } else if (inter.has(name)) {
      spec.side = data::FeatureSide::kInter;
      table = &inter, store = &inter_features_;
    } else if (dataset.user_table() && dataset.user_table()->has(name)) {
      spec.side = data::FeatureSide::kUser;
      table = dataset.user_table(), store = &user_features_;
    } else if (dataset.item_table() && dataset.item_table()->has(name)) {
      spec.side = data::FeatureSide::kItem;
      table = dataset.item_table(), store = &item_features_;
    } else {
      continue;
    }
    const data::Column& c = table->column(name);
    spec.type = c.type;
    spec.num = c.is_token_like() ? (c.vocab ? c.vocab->size() : 1) : 2;
    if (name == opt.uid_field) spec.num = n_users_;
    if (name == opt.iid_field) spec.num = n_items_;
    spec.seq_len = c.is_seq() ? std::max<int64_t>(longest(c), 1) : 0;
    spec.numerical =
        c.is_float_like() && std::find(numerical.begin(), numerical.end(), name) != numerical.end();
    std::vector<int64_t> buckets;
    if (const auto how = bucketing.find(name); spec.numerical && how != bucketing.end()) {
      data::BucketIds ids = data::discretise(c.floats, how->second, c.is_seq());
      spec.discretised = true;
      spec.num = ids.rows;
      buckets = std::move(ids.ids);
    }
    if (store && spec.is_input()) store->add(spec, c, buckets);
    schema_.fields.push_back(spec);
  }
  if (rank_valid || rank_test)
    for (const data::FeatureSpec& f : schema_.fields)
      if (f.is_input() && f.side == data::FeatureSide::kInter)
        throw ConfigError(config.source("eval_args") +
                          ": eval_args.mode: ranking every item builds (user, item) rows that "
                          "never happened, which have no value for the interaction field " +
                          f.name + " of " + inter.source() +
                          "; drop it from load_col (or numerical_features), or evaluate with "
                          "mode labeled");
  std::string fields;
  for (const data::FeatureSpec& f : schema_.fields)
    if (f.is_input())
      fields += (fields.empty() ? "" : ", ") + f.name + " (" + data::field_type_name(f.type) +
                ", " + std::to_string(f.num) + (f.discretised ? " buckets" : "") + ")";
  log::info("context features: " + fields);
}

TaskPipeline::SplitSizes ContextPipeline::split_sizes() const {
  return {split_.train.size(), split_.valid.size(), split_.test.size(), "labelled rows"};
}

models::ModelContext ContextPipeline::model_context(const DeviceManager& device) const {
  models::ModelContext ctx{config_, n_users_, n_items_, train_, device};
  ctx.parts.provide(schema_);
  ctx.parts.provide(item_columns_);
  ctx.preload_weights = preload_weights_;
  return ctx;
}

std::unique_ptr<TrainingSource> ContextPipeline::training_source(models::InputType input,
                                                                 const std::string& model, int rank,
                                                                 int world_size) const {
  if (input != models::InputType::kPointwise)
    throw ConfigError("model: " + model + " is a context model of input type " +
                      models::input_type_name(input) +
                      "; the context task trains point-wise models only");
  return std::make_unique<ContextTrainingSource>(
      rows_, split_.train.rows, source_settings_from_config(config_, rank, world_size), train_,
      item_count_);
}

}  // namespace recbole::tasks

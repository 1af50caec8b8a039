#include "trainer/evaluator.h"

#include "models/capabilities.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include <torch/torch.h>

#include "kernels/cpu_topk.h"
#include "recbole/config/config.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::evaluator {

// The CPU ranking kernels (kernels/cpu_topk.h).
using kernels::mask_items;
using kernels::RowTopK;

EvaluatorSettings evaluator_settings_from_config(const config::Config& config) {
  EvaluatorSettings s;
  s.metrics = config.get_string_list("metrics");
  s.topk = config.get_int_list("topk");
  s.decimal_place = static_cast<int>(config.get_int("metric_decimal_place"));
  s.memory_budget_bytes = config.get_int("eval_memory_budget_mb") << 20;
  if (!config.is_null("tail_ratio")) s.tail_ratio = config.get_double("tail_ratio");
  const YAML::Node mode = config.node("eval_args")["mode"];
  if (mode && mode.IsMap()) {
    // The config check has accepted both already (the same grammar, config/eval_mode.h).
    s.valid_mode = *config::EvalMode::parse(mode["valid"].as<std::string>());
    s.test_mode = *config::EvalMode::parse(mode["test"].as<std::string>());
  }
  s.seed = static_cast<uint64_t>(config.get_int("seed"));
  return s;
}

Evaluator::Evaluator(EvaluatorSettings settings, const DeviceManager& device, Dist& dist,
                     int64_t n_items, std::vector<int64_t> item_train_count)
    : settings_(std::move(settings)), device_(device), dist_(dist), n_items_(n_items) {
  context_.n_items = n_items;
  context_.item_train_count = std::move(item_train_count);
  context_.tail_ratio = settings_.tail_ratio;
  rank_stats_ = needs_rank_stats(settings_.metrics);
  for (const std::string& name : settings_.metrics) {
    const MetricInfo* row = find_metric(name);
    value_metrics_ = value_metrics_ || (row != nullptr && !row->is_ranking());
  }
  // n_items counts the padding id 0. RecBole fails in topk here; the metrics are still defined
  // (every item is ranked), so say it and go on.
  for (int64_t k : settings_.topk)
    if (k > n_items - 1 && n_items > 0) {
      log::warning("topk " + std::to_string(k) + " is more than the " +
                   std::to_string(n_items - 1) + " items: metrics @" + std::to_string(k) +
                   " rank every item");
      break;
    }
}

namespace {

// A row's mask as a sorted range (empty without a mask).
struct MaskRow {
  const int32_t* begin;
  const int32_t* end;
};
MaskRow mask_row(const data::InteractionMatrix* mask, int32_t row) {
  if (!mask) return {nullptr, nullptr};
  return {mask->row_begin(row), mask->row_end(row)};
}

// Appends one row's top-K (kk found entries at most, count valid) as k record slots.
void append_row(RankingRecords& rec, const data::InteractionMatrix& positives, int32_t row,
                int64_t k, const int32_t* idx, int count) {
  for (int64_t j = 0; j < k; ++j) {
    const int32_t item = j < count ? idx[j] : -1;
    rec.topk_items.push_back(item);
    rec.hits.push_back(item >= 0 && positives.contains(row, item) ? 1 : 0);
  }
  rec.pos_len.push_back(static_cast<int32_t>(positives.row_size(row)));
}

// Per-row top-K results of one CPU pass, filled by the workers, appended in row order.
struct TopkTable {
  explicit TopkTable(int64_t rows, int64_t kk)
      : kk(kk),
        vals(static_cast<size_t>(rows * kk)),
        idx(static_cast<size_t>(rows * kk)),
        count(static_cast<size_t>(rows), 0) {}
  int64_t kk;
  std::vector<float> vals;
  std::vector<int32_t> idx;
  std::vector<int> count;
};

// The candidates of the sampled modes (uniN, popN): each positive of a row, followed by its N
// negatives drawn (by the mode's distribution) from the items outside the row's mask and
// positives. One stream per (seed, phase, row): the same candidates whatever the block, the rank
// or the metrics (the ranking and the value records of a split draw alike).
class Candidates {
 public:
  Candidates(const RankingSource& source, const config::EvalMode& m,
             const std::vector<int64_t>& item_train_count, uint64_t seed, Phase phase)
      : positives_(source.positives()),
        used_(excluded(source, m)),
        sampler_(used_, m.distribution(), 1.0, item_train_count),
        negatives_(m.negatives),
        seed_(seed * 0x9e3779b97f4a7c15ULL + (phase == Phase::kTest ? 1 : 0)) {}

  // The items no negative of a row may be: its mask and its positives. A row holding every
  // item leaves nothing to draw; the sampler's own message would speak of training.
  static data::InteractionMatrix excluded(const RankingSource& source, const config::EvalMode& m) {
    const data::InteractionMatrix& p = source.positives();
    data::InteractionMatrix used =
        source.mask() ? data::InteractionMatrix::merge(*source.mask(), p) : p;
    for (int32_t q = 0; q < used.n_users(); ++q)
      if (used.row_size(q) >= used.n_items() - 1)
        throw DataError("eval_args mode " +
                        std::string(m.kind == config::EvalMode::Kind::kPopularity ? "pop" : "uni") +
                        std::to_string(m.negatives) + ": user (query row) " + std::to_string(q) +
                        " holds every item in its history and this split, so no negative can be "
                        "sampled for it; filter such users (user_inter_num_interval) or evaluate "
                        "with mode full");
    return used;
  }

  // visit(item, positive) for row q's candidates in draw order; a negative may repeat.
  template <typename Visit>
  void visit(int32_t q, Visit&& visit) const {
    data::Rng rng(seed_ + static_cast<uint64_t>(q) * 2);
    for (const int32_t* it = positives_.row_begin(q); it != positives_.row_end(q); ++it) {
      visit(*it, true);
      for (int64_t j = 0; j < negatives_; ++j) visit(sampler_.sample(q, rng), false);
    }
  }

 private:
  const data::InteractionMatrix& positives_;
  data::InteractionMatrix used_;
  data::NegativeSampler sampler_;
  int64_t negatives_;
  uint64_t seed_;
};

}  // namespace

std::vector<int32_t> Evaluator::rows_of_this_rank(const RankingSource& source) const {
  std::vector<int32_t> rows;
  for (int32_t q : source.rows())
    if (static_cast<int>(q % dist_.world_size()) == dist_.rank()) rows.push_back(q);
  return rows;
}

void Evaluator::collect_scores_cpu(models::Model& model, const RankingSource& source,
                                   const std::vector<int32_t>& rows, int64_t kk,
                                   RankingRecords& rec) const {
  const data::InteractionMatrix& positives = source.positives();
  const int64_t k = rec.max_k;
  const int64_t block = rows_per_block();
  for (size_t start = 0; start < rows.size(); start += block) {
    const int64_t b = std::min<int64_t>(block, static_cast<int64_t>(rows.size() - start));
    std::vector<int64_t> block_rows(rows.begin() + start, rows.begin() + start + b);
    torch::Tensor scores = scores_for(model, source, block_rows);
    float* S = scores.data_ptr<float>();
    TopkTable top(b, kk);
    std::vector<RankStats> stats(rank_stats_ ? b : 0);
    // Rows in tasks of 8: masking, GAUC statistics and the top-K of a row run on one worker.
    constexpr int64_t kRows = 8;
    parallel_for_blocks(b, kRows, [&](int64_t, int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const int32_t q = static_cast<int32_t>(block_rows[r]);
        float* row = S + r * n_items_;
        row[0] = RowTopK::kNegInf;  // the padding item
        const MaskRow m = mask_row(source.mask(), q);
        mask_items(row, 0, static_cast<int32_t>(n_items_), m.begin, m.end, positives.row_begin(q),
                   positives.row_end(q));
        if (rank_stats_)
          stats[r] = rank_stats(row, n_items_, positives.row_begin(q), positives.row_size(q));
        RowTopK topk(static_cast<int>(kk), &top.vals[r * kk], &top.idx[r * kk]);
        topk.push(row, n_items_, 0);
        top.count[r] = topk.size();
      }
    });
    for (int64_t r = 0; r < b; ++r) {
      append_row(rec, positives, static_cast<int32_t>(block_rows[r]), k, &top.idx[r * kk],
                 top.count[r]);
      if (rank_stats_) {
        rec.pos_rank_sum.push_back(stats[r].pos_rank_sum);
        rec.user_len.push_back(stats[r].user_len);
      }
    }
  }
}

void Evaluator::collect_factors_cpu(models::Model& model, const torch::Tensor& user_factors,
                                    const torch::Tensor& item_factors, const RankingSource& source,
                                    const std::vector<int32_t>& users, int64_t kk,
                                    RankingRecords& rec) const {
  const data::InteractionMatrix& positives = source.positives();
  device_.check(user_factors, model.name(), "user score factors");
  device_.check(item_factors, model.name(), "item score factors");
  // Detached: the workers' GEMMs write into plain buffers (grad mode is per thread).
  const torch::Tensor U = user_factors.detach().to(torch::kFloat32).contiguous();
  const torch::Tensor I = item_factors.detach().to(torch::kFloat32).contiguous();
  if (U.dim() != 2 || I.dim() != 2 || U.size(1) != I.size(1) || I.size(0) != n_items_)
    throw Error(model.name() + ": score factors have shapes " + c10::str(U.sizes()) + " and " +
                c10::str(I.sizes()) + ", expected [n_users, d] and [" + std::to_string(n_items_) +
                ", d]");
  const int64_t d = U.size(1);
  const int64_t n = static_cast<int64_t>(users.size());
  // Tiles: kUsers users × tile items of scores, about 1 MiB, so a tile is scored, masked and
  // scanned while it sits in the core's cache; the score matrix never exists in full. Square-ish
  // tiles: BLAS packs both operands for every tile, and 512 × 512 packs half as much per score
  // as 128 × 2048 (measured on 20M interactions: packing was a quarter of the GEMM time).
  constexpr int64_t kUsers = 512;
  const int64_t tile =
      std::max<int64_t>(1, std::min<int64_t>((int64_t{1} << 18) / kUsers, n_items_));
  const int threads = ThreadPool::instance().threads();
  std::vector<std::vector<float>> score_buf(threads), user_buf(threads);
  TopkTable top(n, kk);
  // Each worker runs single-threaded GEMMs: idle OpenBLAS threads would spin against it.
  BlasThreadsScope blas(1);
  const float* Up = U.data_ptr<float>();
  parallel_for((n + kUsers - 1) / kUsers, [&](int64_t t, int worker) {
    const int64_t lo = t * kUsers, b = std::min(n, lo + kUsers) - lo;
    std::vector<float>& ub = user_buf[worker];
    std::vector<float>& sb = score_buf[worker];
    ub.resize(static_cast<size_t>(kUsers * d));
    sb.resize(static_cast<size_t>(kUsers * tile));
    for (int64_t r = 0; r < b; ++r)
      std::copy_n(Up + static_cast<int64_t>(users[lo + r]) * d, d, ub.data() + r * d);
    const torch::Tensor ublock = torch::from_blob(ub.data(), {b, d});
    std::vector<MaskRow> hist(static_cast<size_t>(b));
    std::vector<RowTopK> topk;
    topk.reserve(static_cast<size_t>(b));
    for (int64_t r = 0; r < b; ++r) {
      hist[r] = mask_row(source.mask(), users[lo + r]);
      topk.emplace_back(static_cast<int>(kk), &top.vals[(lo + r) * kk], &top.idx[(lo + r) * kk]);
    }
    for (int64_t i0 = 0; i0 < n_items_; i0 += tile) {
      const int64_t w = std::min(tile, n_items_ - i0);
      torch::Tensor out = torch::from_blob(sb.data(), {b, w});
      torch::mm_out(out, ublock, I.narrow(0, i0, w).t());
      for (int64_t r = 0; r < b; ++r) {
        const int32_t u = users[lo + r];
        float* row = sb.data() + r * w;
        if (i0 == 0) row[0] = RowTopK::kNegInf;  // the padding item
        hist[r].begin =
            mask_items(row, static_cast<int32_t>(i0), static_cast<int32_t>(i0 + w), hist[r].begin,
                       hist[r].end, positives.row_begin(u), positives.row_end(u));
        topk[r].push(row, w, static_cast<int32_t>(i0));
      }
    }
    for (int64_t r = 0; r < b; ++r) top.count[lo + r] = topk[r].size();
  });
  for (int64_t r = 0; r < n; ++r)
    append_row(rec, positives, users[r], rec.max_k, &top.idx[r * kk], top.count[r]);
}

int64_t Evaluator::rows_per_block() const {
  const int64_t row_bytes = n_items_ * static_cast<int64_t>(sizeof(float));
  return std::max<int64_t>(1, settings_.memory_budget_bytes / std::max<int64_t>(row_bytes, 1));
}

torch::Tensor Evaluator::scores_for(models::Model& model, const RankingSource& source,
                                    const std::vector<int64_t>& block_rows) const {
  const int64_t b = static_cast<int64_t>(block_rows.size());
  torch::Tensor scores = model.full_sort_predict(device_.place(source.batch(block_rows)));
  device_.check(scores, model.name(), "full_sort_predict scores");
  if (scores.dim() != 2 || scores.size(0) != b || scores.size(1) != n_items_)
    throw Error(model.name() + ": full_sort_predict returned shape " + c10::str(scores.sizes()) +
                ", expected [" + std::to_string(b) + ", " + std::to_string(n_items_) + "]");
  if (scores.scalar_type() != torch::kFloat32) scores = scores.to(torch::kFloat32);
  return scores.clone().contiguous();  // masked in place; the model may hand out its own state
}

RankingRecords Evaluator::collect(models::Model& model, const RankingSource& source,
                                  Phase phase) const {
  torch::NoGradGuard no_grad;
  const config::EvalMode& m = mode(phase);
  if (!m.ranking())
    throw ConfigError(
        "eval_args.mode: labeled evaluation needs labelled data; this task ranks "
        "items: expected full, uniN or popN");
  model.eval();
  const int64_t k = *std::max_element(settings_.topk.begin(), settings_.topk.end());
  const int64_t kk = std::min<int64_t>(k, n_items_);
  const std::vector<int32_t> rows = rows_of_this_rank(source);

  RankingRecords rec;
  rec.max_k = static_cast<int>(k);
  if (!device_.is_cuda() && !m.sampled()) {
    torch::Tensor user_factors, item_factors;
    const auto* factors = models::capability<models::FactorScores>(model);
    if (!rank_stats_ && source.rows_are_users() && factors &&
        factors->score_factors(&user_factors, &item_factors))
      collect_factors_cpu(model, user_factors, item_factors, source, rows, kk, rec);
    else
      collect_scores_cpu(model, source, rows, kk, rec);
    return rec;
  }
  collect_on_device(model, source, rows, m, phase, kk, rec);
  return rec;
}

void Evaluator::collect_on_device(models::Model& model, const RankingSource& source,
                                  const std::vector<int32_t>& rows, const config::EvalMode& m,
                                  Phase phase, int64_t kk, RankingRecords& rec) const {
  const data::InteractionMatrix& positives = source.positives();
  const int64_t k = rec.max_k;
  // Sampled modes: every item outside a row's candidates is masked like history.
  std::unique_ptr<Candidates> candidates;
  if (m.sampled())
    candidates =
        std::make_unique<Candidates>(source, m, context_.item_train_count, settings_.seed, phase);
  const int64_t block = rows_per_block();
  const float neg_inf = -std::numeric_limits<float>::infinity();

  for (size_t start = 0; start < rows.size(); start += block) {
    const int64_t b = std::min<int64_t>(block, static_cast<int64_t>(rows.size() - start));
    std::vector<int64_t> block_rows(rows.begin() + start, rows.begin() + start + b);
    torch::Tensor scores = scores_for(model, source, block_rows);

    // Mask the padding column and the history (minus this split's positives).
    scores.select(1, 0).fill_(neg_inf);
    std::vector<int64_t> ri_list, ci_list;
    for (int64_t r = 0; r < b; ++r) {
      const int32_t q = static_cast<int32_t>(block_rows[r]);
      const MaskRow mr = mask_row(source.mask(), q);
      for (const int32_t* it = mr.begin; it != mr.end; ++it)
        if (!positives.contains(q, *it)) ri_list.push_back(r), ci_list.push_back(*it);
    }
    if (!ri_list.empty()) {
      torch::Tensor ri = device_.place(torch::tensor(ri_list, torch::kInt64));
      torch::Tensor ci = device_.place(torch::tensor(ci_list, torch::kInt64));
      scores.index_put_({ri, ci}, neg_inf);
    }
    if (candidates) {
      // Keep only the candidates. A candidate drawn twice counts once, so each is listed once:
      // the lists stay within b × n_items entries however large N is (uni100000 on 1.7k items
      // drew 10⁹ entries, 15 GB, on ml-100k).
      ri_list.clear();
      ci_list.clear();
      std::vector<uint8_t> listed(static_cast<size_t>(n_items_), 0);
      for (int64_t r = 0; r < b; ++r) {
        const size_t first = ci_list.size();
        candidates->visit(static_cast<int32_t>(block_rows[r]), [&](int32_t item, bool) {
          if (listed[static_cast<size_t>(item)]) return;
          listed[static_cast<size_t>(item)] = 1;
          ri_list.push_back(r), ci_list.push_back(item);
        });
        for (size_t i = first; i < ci_list.size(); ++i) listed[static_cast<size_t>(ci_list[i])] = 0;
      }
      torch::Tensor ri = device_.place(torch::tensor(ri_list, torch::kInt64));
      torch::Tensor ci = device_.place(torch::tensor(ci_list, torch::kInt64));
      torch::Tensor kept = scores.index({ri, ci});
      scores.fill_(neg_inf);
      scores.index_put_({ri, ci}, kept);
    }
    auto [top_values, top_index] = torch::topk(scores, kk, /*dim=*/1);
    torch::Tensor tv = DeviceManager::to_host(top_values).contiguous();
    torch::Tensor ti = DeviceManager::to_host(top_index).contiguous();
    const float* tvp = tv.data_ptr<float>();
    const int64_t* tip = ti.data_ptr<int64_t>();
    torch::Tensor cpu_scores;
    if (rank_stats_) cpu_scores = DeviceManager::to_host(scores).contiguous();
    std::vector<int32_t> idx(static_cast<size_t>(kk));
    for (int64_t r = 0; r < b; ++r) {
      const int32_t q = static_cast<int32_t>(block_rows[r]);
      // Sorted descending, so the masked (−inf) entries are a suffix: fewer finite candidates
      // than K leave misses, as RecBole's −inf fill does.
      int count = 0;
      for (; count < kk && tvp[r * kk + count] != neg_inf; ++count)
        idx[count] = static_cast<int32_t>(tip[r * kk + count]);
      append_row(rec, positives, q, k, idx.data(), count);
      if (rank_stats_) {
        auto st = rank_stats(cpu_scores.data_ptr<float>() + r * n_items_, n_items_,
                             positives.row_begin(q), positives.row_size(q));
        rec.pos_rank_sum.push_back(st.pos_rank_sum);
        rec.user_len.push_back(st.user_len);
      }
    }
  }
}

ValueRecords Evaluator::collect_sampled_values(models::Model& model, const RankingSource& source,
                                               Phase phase) const {
  torch::NoGradGuard no_grad;
  const config::EvalMode& m = mode(phase);
  if (!m.sampled())
    throw ConfigError("metrics: value metrics (" + join_names(value_metric_names()) +
                      ") rank no list: they need eval_args mode labeled, or the sampled "
                      "candidates of uniN or popN; this split is evaluated with mode " +
                      (m.ranking() ? "full" : "labeled"));
  model.eval();
  const Candidates candidates(source, m, context_.item_train_count, settings_.seed, phase);
  const std::vector<int32_t> rows = rows_of_this_rank(source);
  ValueRecords rec;
  const int64_t block = rows_per_block();
  for (size_t start = 0; start < rows.size(); start += block) {
    const int64_t b = std::min<int64_t>(block, static_cast<int64_t>(rows.size() - start));
    std::vector<int64_t> block_rows(rows.begin() + start, rows.begin() + start + b);
    const torch::Tensor scores =
        DeviceManager::to_host(scores_for(model, source, block_rows)).contiguous();
    const float* S = scores.data_ptr<float>();
    for (int64_t r = 0; r < b; ++r) {
      const int32_t q = static_cast<int32_t>(block_rows[r]);
      candidates.visit(q, [&](int32_t item, bool positive) {
        rec.scores.push_back(S[r * n_items_ + item]);
        rec.labels.push_back(positive ? 1.0f : 0.0f);
        rec.users.push_back(q);
      });
    }
  }
  return rec;
}

ValueRecords Evaluator::collect_values(models::Model& model, const LabeledSource& source) const {
  torch::NoGradGuard no_grad;
  model.eval();
  ValueRecords rec;
  for (int64_t k = 0; k < source.batches(); ++k) {
    if (static_cast<int>(k % dist_.world_size()) != dist_.rank()) continue;
    const data::Batch batch = device_.place(source.batch(k));
    torch::Tensor scores = model.predict(batch);
    device_.check(scores, model.name(), "predict scores");
    const int64_t b = batch.size();
    if (scores.dim() != 1 || scores.size(0) != b)
      throw Error(model.name() + ": predict returned shape " + c10::str(scores.sizes()) +
                  ", expected [" + std::to_string(b) + "]");
    const torch::Tensor s = DeviceManager::to_host(scores).to(torch::kFloat32).contiguous();
    const torch::Tensor l = DeviceManager::to_host(batch.labels).to(torch::kFloat32).contiguous();
    rec.scores.insert(rec.scores.end(), s.data_ptr<float>(), s.data_ptr<float>() + b);
    rec.labels.insert(rec.labels.end(), l.data_ptr<float>(), l.data_ptr<float>() + b);
    if (batch.users.defined()) {
      const torch::Tensor u = DeviceManager::to_host(batch.users).to(torch::kInt64).contiguous();
      rec.users.insert(rec.users.end(), u.data_ptr<int64_t>(), u.data_ptr<int64_t>() + b);
    }
  }
  return rec;
}

namespace {

template <typename T>
torch::Tensor as_tensor(const std::vector<T>& v, torch::ScalarType type) {
  return torch::from_blob(const_cast<T*>(v.data()), {static_cast<int64_t>(v.size())}, type).clone();
}

template <typename T>
std::vector<T> as_vector(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

// Gathers every rank's records (rank order) so that all ranks hold every row exactly once.
RankingRecords gather(Dist& dist, const RankingRecords& local) {
  if (!dist.active()) return local;
  RankingRecords all;
  all.max_k = local.max_k;
  all.topk_items =
      as_vector<int32_t>(dist.all_gather_cat(as_tensor(local.topk_items, torch::kInt32)));
  all.hits = as_vector<uint8_t>(dist.all_gather_cat(as_tensor(local.hits, torch::kUInt8)));
  all.pos_len = as_vector<int32_t>(dist.all_gather_cat(as_tensor(local.pos_len, torch::kInt32)));
  all.pos_rank_sum =
      as_vector<double>(dist.all_gather_cat(as_tensor(local.pos_rank_sum, torch::kFloat64)));
  all.user_len = as_vector<int32_t>(dist.all_gather_cat(as_tensor(local.user_len, torch::kInt32)));
  return all;
}

ValueRecords gather(Dist& dist, const ValueRecords& local) {
  if (!dist.active()) return local;
  ValueRecords all;
  all.scores = as_vector<float>(dist.all_gather_cat(as_tensor(local.scores, torch::kFloat32)));
  all.labels = as_vector<float>(dist.all_gather_cat(as_tensor(local.labels, torch::kFloat32)));
  if (!local.users.empty())
    all.users = as_vector<int64_t>(dist.all_gather_cat(as_tensor(local.users, torch::kInt64)));
  return all;
}

}  // namespace

MetricValues Evaluator::evaluate(models::Model& model, const EvaluationSource& source,
                                 Phase phase) const {
  if (source.kind() == EvaluationSource::Kind::kRanking) {
    const auto& queries = static_cast<const RankingSource&>(source);
    if (value_metrics_) {
      // As RecBole: each positive is a row labelled 1 and each sampled negative a row labelled
      // 0, scored by the model; the value metrics measure the one against the other.
      ValueRecords rec = gather(dist_, collect_sampled_values(model, queries, phase));
      return compute_value_metrics(settings_.metrics, rec, settings_.decimal_place);
    }
    RankingRecords rec = gather(dist_, collect(model, queries, phase));
    return compute_metrics(settings_.metrics, settings_.topk, rec, context_,
                           settings_.decimal_place);
  }
  if (mode(phase).ranking())
    throw ConfigError("eval_args.mode: this task evaluates labelled data; expected labeled");
  ValueRecords rec =
      gather(dist_, collect_values(model, static_cast<const LabeledSource&>(source)));
  return compute_value_metrics(settings_.metrics, rec, settings_.decimal_place);
}

std::string format_metrics(const MetricValues& values, int decimal_place) {
  std::string out;
  char buf[64];
  for (const auto& [name, v] : values) {
    std::snprintf(buf, sizeof buf, "%.*f", decimal_place, v);
    out += (out.empty() ? "" : "    ") + name + " : " + buf;
  }
  return out;
}

}  // namespace recbole::evaluator

#include "serving/recommender.h"

#include "models/capabilities.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "kernels/cpu_topk.h"
#include "kernels/simd.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/vocabulary.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/utils/thread_pool.h"
#include "tasks/serving_section.h"

namespace recbole {
namespace {

using Clock = std::chrono::steady_clock;
constexpr float kNegInf = kernels::RowTopK::kNegInf;
// Up to this k the streaming top-K of the evaluator (insertion into a sorted list); above it a
// partial sort of the candidates, whose cost does not grow with k × n.
constexpr int64_t kStreamingTopK = 256;

// y[0..n) += a · x[0..n)
RECBOLE_MULTIVERSION
void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// y[0..n) += x[0..n)
RECBOLE_MULTIVERSION
void add_row(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// The process's device manager for serving (CPU; one per process, so that a reload never resets
// the thread pool while another Recommender's job runs).
std::shared_ptr<const DeviceManager> serving_device(const RecommenderOptions& options) {
  static std::mutex mutex;
  static std::shared_ptr<const DeviceManager> device;
  std::lock_guard<std::mutex> lock(mutex);
  if (!device) {
    DeviceSettings s;
    s.device = "cpu";
    s.num_threads = options.num_threads;
    s.torch_num_threads = 1;
    device = std::make_shared<const DeviceManager>(s);
  }
  return device;
}

config::Config config_from_section(const serving::ServingSection& s, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(s.config_yaml);
  } catch (const YAML::Exception& e) {
    throw Error("checkpoint " + path + ": its config is not YAML (" + e.what() + ")");
  }
  if (!root.IsMap()) throw Error("checkpoint " + path + ": its config is not a YAML map");
  config::ConfigSources sources;
  sources.model = s.model;
  sources.dataset = s.dataset;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "model" || key == "dataset") continue;
    YAML::Emitter out;
    out << YAML::Flow << kv.second;
    sources.api_overrides.emplace_back(key, out.c_str());
  }
  try {
    return config::Config::build(sources);
  } catch (const Error& e) {
    throw Error("checkpoint " + path + ": this recbole-cpp cannot rebuild the config of its " +
                s.model + " run: " + e.what());
  }
}

std::vector<float>& scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf;
}

}  // namespace

struct Recommender::Impl {
  enum class Scorer { kFactors, kItemWeights, kModel };

  Info info;
  std::shared_ptr<const DeviceManager> device;
  std::unique_ptr<config::Config> config;
  serving::ServingSection section;
  std::unique_ptr<serving::TaskServing> task;
  std::shared_ptr<models::Model> model;
  data::Vocabulary users, items;
  Scorer scorer = Scorer::kModel;
  bool from_history = false;
  int64_t n_items = 0;
  // kFactors: user factors [n_users, d] and item factors transposed [d, n_items] (one axpy per
  // dimension scores every item: vectorised without a horizontal sum).
  torch::Tensor user_factors, item_factors_t;
  int64_t dim = 0;
  // kFactors with an approximate index (RecommenderOptions::index): searched instead of scoring
  // every item.
  std::unique_ptr<serving::ItemIndex> index;
  // kItemWeights
  torch::Tensor w_dense, w_indptr, w_indices, w_values, w_bias;

  const int32_t* hist_begin(int32_t u) const { return section.history.row_begin(u); }
  const int32_t* hist_end(int32_t u) const { return section.history.row_end(u); }

  // Scores of every item for known user u into out[0..n_items) (factors and item weights).
  void score_user_direct(int32_t u, float* out) const {
    if (scorer == Scorer::kFactors) {
      std::fill(out, out + n_items, 0.0f);
      const float* uf = user_factors.data_ptr<float>() + static_cast<int64_t>(u) * dim;
      const float* it = item_factors_t.data_ptr<float>();
      for (int64_t j = 0; j < dim; ++j) axpy(uf[j], it + j * n_items, out, n_items);
      return;
    }
    score_history_weights(hist_begin(u), hist_end(u), out);
  }

  // x · W (+ bias) for the 0/1 row x holding the items [h, h_end).
  void score_history_weights(const int32_t* h, const int32_t* h_end, float* out) const {
    if (w_bias.defined())
      std::copy_n(w_bias.data_ptr<float>(), n_items, out);
    else
      std::fill(out, out + n_items, 0.0f);
    if (w_dense.defined()) {
      const float* w = w_dense.data_ptr<float>();
      for (const int32_t* p = h; p != h_end; ++p)
        add_row(w + static_cast<int64_t>(*p) * n_items, out, n_items);
      return;
    }
    const int64_t* ip = w_indptr.data_ptr<int64_t>();
    const int64_t* ix = w_indices.data_ptr<int64_t>();
    const float* v = w_values.data_ptr<float>();
    for (const int32_t* p = h; p != h_end; ++p)
      for (int64_t e = ip[*p]; e < ip[*p + 1]; ++e) out[ix[e]] += v[e];
  }

  // The model's scores for a query batch (the task's scores()), as a CPU float32 [B, n_items]
  // contiguous tensor.
  torch::Tensor model_scores(const data::Batch& batch, int64_t rows) const {
    torch::NoGradGuard no_grad;
    torch::Tensor s = task->scores(*model, batch, *device);
    if (s.dim() != 2 || s.size(0) != rows || s.size(1) != n_items)
      throw Error(info.model + ": full_sort_predict returned shape " + c10::str(s.sizes()) +
                  ", expected [" + std::to_string(rows) + ", " + std::to_string(n_items) + "]");
    return DeviceManager::to_host(s).to(torch::kFloat32).contiguous();
  }

  // Masks item 0 and the sorted exclusions in `row` (modified), then takes the top k.
  IdList top_k(float* row, int64_t k, const int32_t* ex, const int32_t* ex_end) const {
    row[0] = kNegInf;
    for (const int32_t* p = ex; p != ex_end; ++p) row[*p] = kNegInf;
    k = std::min(k, n_items);
    IdList out;
    if (k <= kStreamingTopK) {
      float vals[kStreamingTopK];
      int32_t idx[kStreamingTopK];
      kernels::RowTopK top(static_cast<int>(k), vals, idx);
      top.push(row, n_items, 0);
      out.reserve(static_cast<size_t>(top.size()));
      for (int j = 0; j < top.size(); ++j) out.emplace_back(idx[j], vals[j]);
      return out;
    }
    for (int64_t i = 0; i < n_items; ++i)
      if (row[i] > kNegInf) out.emplace_back(static_cast<int32_t>(i), row[i]);
    const auto better = [](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
      return a.second > b.second || (a.second == b.second && a.first < b.first);
    };
    if (static_cast<int64_t>(out.size()) > k) {
      std::partial_sort(out.begin(), out.begin() + k, out.end(), better);
      out.resize(static_cast<size_t>(k));
    } else {
      std::sort(out.begin(), out.end(), better);
    }
    return out;
  }

  // Top-k of users[lo, hi) into out[lo, hi).
  void recommend_block(const std::vector<int32_t>& users, size_t lo, size_t hi, int64_t k,
                       bool exclude, std::vector<IdList>& out) const {
    if (index) {
      for (size_t r = lo; r < hi; ++r) {
        const float* q = user_factors.data_ptr<float>() + static_cast<int64_t>(users[r]) * dim;
        out[r] = exclude ? index->search(q, k, hist_begin(users[r]), hist_end(users[r]))
                         : index->search(q, k, nullptr, nullptr);
      }
      return;
    }
    if (scorer != Scorer::kModel) {
      float* row = scratch(n_items).data();
      for (size_t r = lo; r < hi; ++r) {
        score_user_direct(users[r], row);
        out[r] = exclude ? top_k(row, k, hist_begin(users[r]), hist_end(users[r]))
                         : top_k(row, k, nullptr, nullptr);
      }
      return;
    }
    // One user per call: a row of a batched product may round differently from the same row
    // alone (BLAS picks its kernel by the batch size), and a user's answer must not depend on
    // who else is asked in the same call (recbole_recommend --all_users and recbole_serve give
    // identical scores).
    float* row = scratch(n_items).data();
    for (size_t r = lo; r < hi; ++r) {
      const torch::Tensor scores = model_scores(task->user_batch({users[r]}), 1);
      std::copy_n(scores.data_ptr<float>(), n_items, row);
      out[r] = exclude ? top_k(row, k, hist_begin(users[r]), hist_end(users[r]))
                       : top_k(row, k, nullptr, nullptr);
    }
  }
};

std::string Recommender::Info::summary() const {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", load_seconds);
  return model + " on " + dataset + ": " + std::to_string(n_users - 1) + " users, " +
         std::to_string(n_items - 1) + " items, scored by " + scorer + ", index " + index +
         " (loaded in " + seconds + " s)";
}

Recommender::Recommender() : impl_(std::make_unique<Impl>()) {}
Recommender::~Recommender() = default;

std::shared_ptr<const Recommender> Recommender::load(const std::string& path,
                                                     const RecommenderOptions& options) {
  const auto t0 = Clock::now();
  std::shared_ptr<Recommender> r(new Recommender());
  Impl& m = *r->impl_;
  if (options.index.kind != "exact" && options.index.kind != "ivf")
    throw Error("index: expected exact or ivf, got \"" + options.index.kind + "\"");
  m.device = serving_device(options);
  torch::serialize::InputArchive archive;
  trainer::load_checkpoint_archive(path, "checkpoint", archive, torch::Device(torch::kCPU));
  torch::serialize::InputArchive task_section;
  m.section = serving::read_serving_section(archive, path, &task_section);
  const serving::ServingSection& s = m.section;
  try {
    models::find_model(s.model);
  } catch (const Error&) {
    throw Error("checkpoint " + path + " holds a " + s.model +
                " model, which this recbole-cpp does not have");
  }
  m.config = std::make_unique<config::Config>(config_from_section(s, path));
  m.task = serving::load_task_serving(task_section, s, path);
  {
    torch::NoGradGuard no_grad;
    m.model = models::create_model(s.model, m.task->model_context(*m.config, s, *m.device));
    try {
      m.model->load(archive);
    } catch (const c10::Error& e) {
      throw Error("checkpoint " + path + ": its tensors do not fit the " + s.model +
                  " built from its own config (" +
                  std::string(e.what_without_backtrace()).substr(0, 300) + ")");
    }
    m.model->eval();
    m.model->before_evaluation();
  }
  m.n_items = s.n_items;
  if (m.model->n_items() != s.n_items || m.model->n_users() != s.n_users)
    throw Error("checkpoint " + path + ": the model has " + std::to_string(m.model->n_users()) +
                " users and " + std::to_string(m.model->n_items()) + " items, its vocabularies " +
                std::to_string(s.n_users) + " and " + std::to_string(s.n_items));
  m.users.reserve(s.user_tokens.size());
  m.items.reserve(s.item_tokens.size());
  for (const std::string& t : s.user_tokens) m.users.append(t);
  for (const std::string& t : s.item_tokens) m.items.append(t);

  torch::Tensor uf, itf;
  models::ItemWeightScores::ItemWeights w;
  const auto* factors = models::capability<models::FactorScores>(*m.model);
  const auto* item_weights = models::capability<models::ItemWeightScores>(*m.model);
  const auto* from_history = models::capability<models::HistoryScores>(*m.model);
  if (factors && factors->score_factors(&uf, &itf)) {
    uf = DeviceManager::to_host(uf.detach()).to(torch::kFloat32).contiguous();
    itf = DeviceManager::to_host(itf.detach()).to(torch::kFloat32);
    if (uf.dim() != 2 || itf.dim() != 2 || uf.size(1) != itf.size(1) || uf.size(0) != s.n_users ||
        itf.size(0) != s.n_items)
      throw Error(s.model + ": score factors have shapes " + c10::str(uf.sizes()) + " and " +
                  c10::str(itf.sizes()));
    m.scorer = Impl::Scorer::kFactors;
    m.user_factors = uf;
    m.item_factors_t = itf.t().contiguous();
    m.dim = uf.size(1);
    if (options.index.kind != "exact") {
      const torch::Tensor rows = itf.contiguous();
      m.index = serving::ItemIndex::build(rows.data_ptr<float>(), s.n_items, m.dim, options.index);
    }
  } else if (item_weights && item_weights->score_item_weights(&w)) {
    torch::NoGradGuard no_grad;
    m.scorer = Impl::Scorer::kItemWeights;
    if (w.dense.defined()) {
      m.w_dense = DeviceManager::to_host(w.dense.detach()).to(torch::kFloat32).contiguous();
      if (m.w_dense.dim() != 2 || m.w_dense.size(0) != s.n_items || m.w_dense.size(1) != s.n_items)
        throw Error(s.model + ": item weights have shape " + c10::str(m.w_dense.sizes()));
    } else {
      m.w_indptr = DeviceManager::to_host(w.indptr).to(torch::kInt64).contiguous();
      m.w_indices = DeviceManager::to_host(w.indices).to(torch::kInt64).contiguous();
      m.w_values = DeviceManager::to_host(w.values).to(torch::kFloat32).contiguous();
      if (m.w_indptr.numel() != s.n_items + 1 || m.w_indices.numel() != m.w_values.numel())
        throw Error(s.model + ": item weights in CSR have inconsistent sizes");
      const int64_t* ip = m.w_indptr.data_ptr<int64_t>();
      const int64_t* ix = m.w_indices.data_ptr<int64_t>();
      for (int64_t i = 0; i < s.n_items; ++i)
        if (ip[i] > ip[i + 1]) throw Error(s.model + ": item weights in CSR are damaged");
      if (ip[0] != 0 || ip[s.n_items] != m.w_indices.numel())
        throw Error(s.model + ": item weights in CSR are damaged");
      for (int64_t e = 0; e < m.w_indices.numel(); ++e)
        if (ix[e] < 0 || ix[e] >= s.n_items)
          throw Error(s.model + ": item weights in CSR are damaged");
    }
    if (w.bias.defined())
      m.w_bias = DeviceManager::to_host(w.bias.detach()).to(torch::kFloat32).contiguous();
    m.from_history = true;
  } else {
    m.scorer = Impl::Scorer::kModel;
    m.from_history = from_history && from_history->scores_from_history();
  }

  Info& info = m.info;
  info.path = path;
  info.model = s.model;
  info.task = s.task;
  info.dataset = s.dataset;
  info.n_users = s.n_users;
  info.n_items = s.n_items;
  info.interactions = s.history.nnz();
  info.written_at = s.written_at;
  info.loaded_at = static_cast<int64_t>(std::time(nullptr));
  std::error_code ec;
  info.file_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  info.scorer = m.scorer == Impl::Scorer::kFactors       ? "factors"
                : m.scorer == Impl::Scorer::kItemWeights ? "item weights"
                                                         : "model";
  info.from_history = m.from_history;
  info.index = m.index ? m.index->describe() : "exact";
  if (options.index.kind != "exact" && !m.index)
    throw Error("index " + options.index.kind + " searches the item factors of a factor model; " +
                s.model + " is scored by " + info.scorer + ": serve it with the exact index");
  info.config_yaml = s.config_yaml;
  info.load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

const Recommender::Info& Recommender::info() const { return impl_->info; }

int32_t Recommender::user_id(std::string_view token) const {
  const int32_t id = impl_->users.find(token);
  return id > 0 ? id : -1;
}

int32_t Recommender::item_id(std::string_view token) const {
  const int32_t id = impl_->items.find(token);
  return id > 0 ? id : -1;
}

const std::string& Recommender::user_token(int32_t id) const { return impl_->users.token(id); }
const std::string& Recommender::item_token(int32_t id) const { return impl_->items.token(id); }
int64_t Recommender::n_users() const { return impl_->section.n_users; }
int64_t Recommender::n_items() const { return impl_->n_items; }

std::vector<int32_t> Recommender::history_of(int32_t user) const {
  return std::vector<int32_t>(impl_->hist_begin(user), impl_->hist_end(user));
}

bool Recommender::can_recommend_from_history() const { return impl_->from_history; }

namespace {

void check_k(int64_t k) {
  if (k < 1) throw Error("k must be at least 1, got " + std::to_string(k));
}

}  // namespace

void Recommender::recommend_ids(const std::vector<int32_t>& users, int64_t k, bool exclude_history,
                                std::vector<IdList>* out, bool parallel) const {
  check_k(k);
  const Impl& m = *impl_;
  for (int32_t u : users)
    if (u < 1 || u >= m.section.n_users)
      throw Error("user id " + std::to_string(u) + " is out of range [1, " +
                  std::to_string(m.section.n_users) + ")");
  out->assign(users.size(), IdList());
  const int64_t block = 64;
  const int64_t n = static_cast<int64_t>(users.size());
  const int64_t blocks = (n + block - 1) / block;
  auto run = [&](int64_t b, int) {
    const size_t lo = static_cast<size_t>(b * block);
    const size_t hi = static_cast<size_t>(std::min(n, (b + 1) * block));
    m.recommend_block(users, lo, hi, k, exclude_history, *out);
  };
  if (parallel && blocks > 1) {
    BlasThreadsScope blas(1);
    parallel_for(blocks, run);
  } else {
    for (int64_t b = 0; b < blocks; ++b) run(b, 0);
  }
}

std::vector<Recommendation> Recommender::recommend(std::string_view user, int64_t k,
                                                   bool exclude_history) const {
  check_k(k);
  const int32_t u = user_id(user);
  if (u < 0) throw UnknownUserError("unknown user \"" + std::string(user) + "\"");
  std::vector<IdList> lists;
  recommend_ids({u}, k, exclude_history, &lists);
  std::vector<Recommendation> out;
  out.reserve(lists[0].size());
  for (const auto& [id, score] : lists[0]) out.push_back({id, score, item_token(id)});
  return out;
}

std::vector<UserRecommendations> Recommender::recommend_batch(const std::vector<std::string>& users,
                                                              int64_t k,
                                                              bool exclude_history) const {
  check_k(k);
  std::vector<UserRecommendations> out(users.size());
  std::vector<int32_t> ids;
  std::vector<size_t> where;
  for (size_t r = 0; r < users.size(); ++r) {
    out[r].user = users[r];
    const int32_t u = user_id(users[r]);
    out[r].known = u > 0;
    if (u > 0) {
      ids.push_back(u);
      where.push_back(r);
    }
  }
  std::vector<IdList> lists;
  recommend_ids(ids, k, exclude_history, &lists);
  for (size_t j = 0; j < ids.size(); ++j) {
    auto& items = out[where[j]].items;
    items.reserve(lists[j].size());
    for (const auto& [id, score] : lists[j]) items.push_back({id, score, item_token(id)});
  }
  return out;
}

std::vector<int32_t> Recommender::item_ids(const std::vector<std::string>& items,
                                           std::vector<std::string>* unknown) const {
  std::vector<int32_t> ids;
  ids.reserve(items.size());
  for (const std::string& t : items) {
    const int32_t id = item_id(t);
    if (id > 0)
      ids.push_back(id);
    else if (unknown != nullptr)
      unknown->push_back(t);
  }
  return ids;
}

Recommender::IdList Recommender::recommend_history_ids(const std::vector<int32_t>& history,
                                                       int64_t k, bool exclude_given) const {
  check_k(k);
  const Impl& m = *impl_;
  if (!m.from_history)
    throw NotSupportedError(
        m.info.model + " cannot recommend from an item history: " +
        (m.scorer == Impl::Scorer::kFactors
             ? "it is a factor model, whose users are its own trained parameters"
             : "its scores need the user's own trained parameters") +
        " (models that can: EASE, SLIMElastic, ADMMSLIM, ItemKNN with knn_method item, "
        "MultiVAE, MultiDAE, RecVAE, MacridVAE, Pop, and the sequential models but FPMC)");
  for (int32_t i : history)
    if (i < 1 || i >= m.n_items)
      throw Error("item id " + std::to_string(i) + " is out of range [1, " +
                  std::to_string(m.n_items) + ")");
  float* row = scratch(m.n_items).data();
  if (m.scorer == Impl::Scorer::kItemWeights) {
    // x · W for the 0/1 row x: each item once.
    std::vector<int32_t> once = history;
    std::sort(once.begin(), once.end());
    once.erase(std::unique(once.begin(), once.end()), once.end());
    m.score_history_weights(once.data(), once.data() + once.size(), row);
  } else {
    const torch::Tensor scores = m.model_scores(m.task->history_batch(history, m.n_items), 1);
    std::copy_n(scores.data_ptr<float>(), m.n_items, row);
  }
  return exclude_given ? m.top_k(row, k, history.data(), history.data() + history.size())
                       : m.top_k(row, k, nullptr, nullptr);
}

std::vector<Recommendation> Recommender::recommend_from_history(
    const std::vector<std::string>& items, int64_t k, bool exclude_given,
    std::vector<std::string>* unknown_items) const {
  const std::vector<int32_t> ids = item_ids(items, unknown_items);
  std::vector<Recommendation> out;
  for (const auto& [id, score] : recommend_history_ids(ids, k, exclude_given))
    out.push_back({id, score, item_token(id)});
  return out;
}

}  // namespace recbole

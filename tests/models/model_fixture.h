#pragma once
// A tiny synthetic dataset and the objects a model is built from, shared by the model tests.
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "models/capabilities.h"
#include "models/layers/graph.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/data/knowledge_graph.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/utils/error.h"

namespace recbole::testing {

// Config for `model` on a dataset named "tiny" (no files are read), plus overrides.
inline config::Config model_config(
    const std::string& model, std::vector<std::pair<std::string, std::string>> overrides = {}) {
  config::ConfigSources s;
  s.model = model;
  s.dataset = "tiny";
  s.api_overrides = std::move(overrides);
  return config::Config::build(s);
}

// model_config on the CPU, for tests that check a model's maths against references they compute
// on the CPU; the contract tests (test_model_contract.cpp) run every model on the GPU when there
// is one.
inline config::Config cpu_model_config(
    const std::string& model, std::vector<std::pair<std::string, std::string>> overrides = {}) {
  overrides.emplace_back("device", "cpu");
  return model_config(model, std::move(overrides));
}

// 40 users × 30 items (ids 0 are padding and empty). Users lean on overlapping windows of items
// so that neighbourhoods and co-occurrences are non-trivial; some items are never seen.
struct TinyData {
  int64_t n_users = 40;
  int64_t n_items = 30;
  data::InteractionMatrix train, valid;
  // A knowledge graph over the items (entities 1..29) and 15 more entities (30..44), with three
  // relations: items 1..26 link to an item and an extra entity; the extra entities form a ring.
  data::KnowledgeGraph kg;

  TinyData() {
    std::vector<int32_t> heads, rels, tails;
    for (int32_t i = 1; i <= 26; ++i) {
      heads.push_back(i), rels.push_back(1 + i % 3), tails.push_back(30 + i % 15);
      heads.push_back(i), rels.push_back(1), tails.push_back(1 + (i * 5) % 26);
    }
    for (int32_t j = 0; j < 15; ++j)
      heads.push_back(30 + j), rels.push_back(3), tails.push_back(30 + (j + 1) % 15);
    kg = data::KnowledgeGraph::from_ids(45, 3, 26, heads, rels, tails);
    std::vector<int32_t> tu, ti, vu, vi;
    for (int32_t u = 1; u < n_users; ++u) {
      const int32_t start = 1 + (u * 7) % 22;
      const int32_t len = 3 + u % 5;
      for (int32_t k = 0; k < len; ++k) {
        tu.push_back(u);
        ti.push_back(1 + (start + k * (1 + u % 3)) % 26);  // items 27..29 never appear
      }
      tu.push_back(u);
      ti.push_back(1 + (u % 4));  // a few popular items
      vu.push_back(u);
      vi.push_back(1 + (start + len + 2) % 26);
    }
    train = data::InteractionMatrix(n_users, n_items, tu, ti);
    valid = data::InteractionMatrix(n_users, n_items, vu, vi);
  }
};

// Everything a model needs, kept alive together (the context holds references).
struct ModelHarness {
  config::Config config;
  const TinyData& data;
  DeviceManager device;
  models::ModelContext ctx;

  ModelHarness(config::Config c, const TinyData& d)
      : config(std::move(c)),
        data(d),
        device(DeviceManager::from_config(config)),
        ctx{config, d.n_users, d.n_items, d.train, device} {
    ctx.parts.provide(d.kg);
  }

  std::shared_ptr<models::Model> create() { return models::create_model(config.model(), ctx); }
};

// The capability C of `model` (models/capabilities.h); the test fails when the model lacks it.
template <typename C>
C& as(models::Model& model) {
  C* c = models::capability<C>(model);
  REQUIRE(c != nullptr);
  return *c;
}

// A query batch of `users` (and, when given, `items`) on the device.
inline data::Batch user_batch(const DeviceManager& device, std::vector<int64_t> users,
                              std::vector<int64_t> items = {}) {
  data::Batch b;
  b.users = torch::tensor(users, torch::kInt64);
  if (!items.empty()) b.items = torch::tensor(items, torch::kInt64);
  return device.place(b);
}

// The scores of users [1, n_users) as a CPU tensor, in one block.
inline torch::Tensor all_scores(models::Model& m, const DeviceManager& device, int64_t n_users) {
  torch::NoGradGuard no_grad;
  data::Batch b;
  b.users = torch::arange(1, n_users, torch::kInt64);
  return m.full_sort_predict(device.place(b)).to(torch::kCPU);
}

// The model's parameter `name` as a float64 CPU copy.
// Saves `from` (Model::save) through bytes and loads them into `into` (a fresh model of the
// same config), then sets `into` to eval mode: a checkpoint's round trip.
inline void save_and_load(models::Model& from, models::Model& into, const torch::Device& device) {
  torch::serialize::OutputArchive out;
  from.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read, device);
  into.load(in);
  into.eval();
}

inline torch::Tensor param(const models::Model& m, const std::string& name) {
  return m.named_parameters()[name].detach().to(torch::kCPU, torch::kFloat64);
}

// A pointwise batch of (user, item, label) rows on the device.
inline data::Batch pointwise_batch(const DeviceManager& device, std::vector<int64_t> users,
                                   std::vector<int64_t> items, std::vector<float> labels) {
  data::Batch b = user_batch(device, std::move(users), std::move(items));
  b.labels = device.place(torch::tensor(labels));
  return b;
}

// The binary training matrix, dense [n_users, n_items] float64 on the CPU.
inline torch::Tensor dense_train(const TinyData& d) {
  torch::Tensor r = torch::zeros({d.n_users, d.n_items}, torch::kFloat64);
  for (int32_t u = 0; u < d.n_users; ++u)
    for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it) r[u][*it] = 1.0;
  return r;
}

// A of the binary user-item graph: dense [N, N] with N = n_users + n_items (users first).
inline torch::Tensor dense_graph(const TinyData& d, torch::Dtype dtype = torch::kFloat64) {
  const int64_t n = d.n_users + d.n_items;
  torch::Tensor a = torch::zeros({n, n}, dtype);
  for (int32_t u = 0; u < d.n_users; ++u)
    for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it) {
      a[u][d.n_users + *it] = 1.0;
      a[d.n_users + *it][u] = 1.0;
    }
  return a;
}

// D^{-1/2} A D^{-1/2} of dense_graph(d), computed directly, with RecBole's 1e-7.
inline torch::Tensor dense_adjacency(const TinyData& d, torch::Dtype dtype = torch::kFloat64) {
  const torch::Tensor a = dense_graph(d, dtype);
  const torch::Tensor inv = (a.sum(1) + 1e-7).pow(-0.5);
  return inv.unsqueeze(1) * a * inv.unsqueeze(0);
}

// The dense form of a host CSR matrix, on the CPU.
inline torch::Tensor dense(const models::layers::SparseMatrix& m,
                           torch::Dtype dtype = torch::kFloat64) {
  torch::Tensor out = torch::zeros({m.rows, m.cols}, dtype);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t k = m.indptr[static_cast<size_t>(r)]; k < m.indptr[static_cast<size_t>(r) + 1];
         ++k)
      out[r][m.indices[static_cast<size_t>(k)]] =
          static_cast<double>(m.values[static_cast<size_t>(k)]);
  return out;
}

// The trainer's side of a step with an optimizer that leaves the weights (lr 0), so that the
// gradients of a model's train_step can be read after it.
class ZeroStep : public models::TrainStep {
 public:
  explicit ZeroStep(models::Model& m) : sgd_(m.parameters(), torch::optim::SGDOptions(0.0)) {}
  torch::optim::Optimizer& optimizer(size_t) override { return sgd_; }
  void finish_gradients() override {}

 private:
  torch::optim::SGD sgd_;
};

// Three copies of b's rows in a random order: a batch larger than one training part, whose
// parts mix the rows.
inline data::Batch three_shuffled_copies(data::Batch b) {
  const torch::Tensor order = torch::randperm(3 * b.size(), torch::kInt64);
  b.for_each_column([&](torch::Tensor& t) { t = torch::cat({t, t, t}); });
  return b.index_select(order);
}

// Checks that m.train_step(b) — which may cut the batch into parts — gives the loss and every
// gradient of calculate_loss(b).backward() (the parameters that loss reaches; at least one).
inline void check_step_equals_whole_batch(models::Model& m, const data::Batch& b) {
  const torch::Tensor whole = m.calculate_loss(b);
  whole.backward();
  std::map<std::string, torch::Tensor> expected;
  for (const auto& p : m.named_parameters())
    if (p.value().grad().defined()) expected[p.key()] = p.value().grad().clone();
  REQUIRE_FALSE(expected.empty());
  ZeroStep step(m);
  const torch::Tensor parts = m.train_step(b, step);
  CHECK(parts.item<double>() == Approx(whole.item<double>()).epsilon(1e-5));
  for (const auto& [name, grad] : expected) {
    INFO(name);
    CHECK(torch::allclose(m.named_parameters()[name].grad(), grad, 1e-4, 1e-6));
  }
}

// Draws every parameter from N(0, std²) (fixed seed), so that scores are far from what the
// initialisation gives and a formula that ignores a parameter shows.
inline void scramble(models::Model& m, double std) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  for (auto& p : m.parameters()) p.normal_(0.0, std);
}

// Building `model` with `overrides` on d is a ConfigError whose message names `key`, and the
// model when `names_model` (the model itself refuses the value; the config's declaration checks
// name the key and where it was set).
inline void check_bad_key(const std::string& model,
                          std::vector<std::pair<std::string, std::string>> overrides,
                          const std::string& key, bool names_model = false,
                          const TinyData& d = TinyData()) {
  try {
    ModelHarness h(model_config(model, std::move(overrides)), d);
    h.create();
    FAIL("no ConfigError for " << model << " " << key);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    INFO(what);
    if (names_model) CHECK(what.find(model) != std::string::npos);
    CHECK(what.find(key) != std::string::npos);
  }
}

}  // namespace recbole::testing

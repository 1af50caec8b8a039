// The model contract, run over every registered general and knowledge model: it builds, fits (or
// trains a few batches), scores have the right shape, dtype and device, seen items never reach the
// top-K, a fixed seed repeats exactly, and a save/load round trip gives identical scores.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/runtime/dist.h"
#include "recbole/utils/error.h"
#include "tasks/general/interaction_sources.h"
#include "tasks/knowledge/kg_triple_source.h"
#include "tasks/task_family.h"
#include "tasks/training_source.h"
#include "tests/models/model_fixture.h"
#include "trainer/evaluator.h"

using recbole::models::Model;
using recbole::testing::all_scores;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

namespace {

// Fits a fitted-once model; trains any other for 3 batches of the training source its input
// type asks for (the one run() would build), with a fixed seed.
void train(Model& m, const TinyData& d, const recbole::DeviceManager& device,
           const recbole::config::Config& config) {
  if (m.fitted_once()) {
    m.fit();
    return;
  }
  m.train();
  torch::optim::Adam opt(m.parameters(), torch::optim::AdamOptions(0.01));
  std::vector<int32_t> users, items;
  for (int32_t u = 1; u < d.n_users; ++u)
    for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it)
      users.push_back(u), items.push_back(*it);
  const std::vector<int64_t> counts = d.train.item_degrees();
  recbole::tasks::SourceSettings settings =
      recbole::tasks::source_settings_from_config(config, 0, 1);
  settings.batch_size = static_cast<int64_t>(users.size()) / 3;
  std::unique_ptr<recbole::tasks::TrainingSource> source = recbole::tasks::make_training_source(
      m.input_type(), m.name(), {users, items, d.train, counts}, settings);
  REQUIRE(source != nullptr);
  // Knowledge models that train on the KG get its triples beside each batch.
  if (m.descriptor().auxiliary_batches)
    source = std::make_unique<recbole::tasks::KgTripleSource>(std::move(source), d.kg, settings);
  source->start_epoch(0);
  recbole::data::Batch batch;
  for (int b = 0; b < 3 && source->next(batch); ++b) {
    opt.zero_grad();
    torch::Tensor loss = m.calculate_loss(device.place(batch));
    REQUIRE(loss.numel() == 1);
    REQUIRE(std::isfinite(loss.item<double>()));
    loss.backward();
    opt.step();
  }
}

}  // namespace

TEST_CASE("every registered model satisfies the model contract", "[models][contract]") {
  const auto models = recbole::models::registered_models();
  std::set<std::string> names;
  for (const auto& d : models) names.insert(d.name);
  // The shipped models are registered (the list generated from RECBOLE_REGISTER_MODEL lines).
  for (const char* expected :
       {"BPR", "Random", "Pop", "ItemKNN", "EASE", "ADMMSLIM", "SLIMElastic"})
    CHECK(names.count(expected) == 1);

  TinyData d;
  // Defaults that do not fit 40 users × 30 items: NCL's 1000 clusters need 1000 rows per table.
  const std::map<std::string, std::vector<std::pair<std::string, std::string>>> fit_tiny = {
      {"NCL", {{"num_clusters", "8"}}},
      // NCEPLRec's rank 450 exceeds the 30 singular values of a 40 × 30 matrix.
      {"NCEPLRec", {{"rank", "10"}}}};
  for (const auto& descriptor : models) {
    // Sequential models rank samples of sequences: test_sequential_models.cpp.
    if (descriptor.task == "sequential") continue;
    const std::string& name = descriptor.name;
    // Context models score labelled feature rows: tests/models/test_context_contract.cpp.
    if (descriptor.task == "context") continue;
    DYNAMIC_SECTION(name) {
      CHECK_FALSE(descriptor.description.empty());
      const auto overrides = fit_tiny.find(name);
      ModelHarness h(
          recbole::testing::model_config(
              name, overrides == fit_tiny.end() ? std::vector<std::pair<std::string, std::string>>{}
                                                : overrides->second),
          d);
      h.device.seed(h.device.base_seed());
      std::shared_ptr<Model> m = h.create();
      REQUIRE(m->name() == name);
      CHECK(m->input_type() == descriptor.input);
      if (m->fitted_once()) {
        // No dummy parameters: fitted state lives in buffers.
        CHECK(m->parameters().empty());
        CHECK(m->trainable_parameter_count() == 0);
        CHECK_THROWS_AS(m->calculate_loss({}), recbole::Error);
      }
      train(*m, d, h.device, h.config);
      m->eval();

      // Shape, dtype, device, and independence from the block a user is scored in.
      auto no_grad = std::make_unique<torch::NoGradGuard>();
      const recbole::data::Batch users = recbole::testing::user_batch(h.device, {3, 1, 17, 39});
      torch::Tensor scores = m->full_sort_predict(users);
      CHECK_NOTHROW(h.device.check(scores, name, "full_sort_predict scores"));
      REQUIRE(scores.device() == h.device.device());
      REQUIRE(scores.scalar_type() == torch::kFloat32);
      REQUIRE(scores.sizes() == torch::IntArrayRef({4, d.n_items}));
      REQUIRE(torch::isfinite(scores).all().item<bool>());
      torch::Tensor alone = m->full_sort_predict(recbole::testing::user_batch(h.device, {17}));
      // Up to float32 rounding, which differs between a one-row and a four-row product (BLAS
      // picks other kernels): an absolute tolerance on the scores' scale.
      const double scale = std::max(1.0, scores.abs().max().item<double>());
      CHECK(torch::allclose(alone.to(torch::kCPU), scores[2].unsqueeze(0).to(torch::kCPU), 1e-5,
                            1e-6 * scale));
      // predict agrees with full_sort_predict.
      const recbole::data::Batch pair_batch =
          recbole::testing::user_batch(h.device, {3, 1, 17, 39}, {5, 0, 12, 29});
      const torch::Tensor& items = pair_batch.items;
      torch::Tensor pairs = m->predict(pair_batch);
      REQUIRE(pairs.device() == h.device.device());
      CHECK(torch::allclose(pairs.to(torch::kCPU),
                            scores.gather(1, items.view({-1, 1})).view({-1}).to(torch::kCPU), 1e-5,
                            1e-6));

      // Evaluator-style masking: a user's training items never reach the top-K of validation.
      recbole::Dist dist;
      recbole::evaluator::EvaluatorSettings es;
      es.metrics = {"recall", "ndcg"};
      es.topk = {10};
      recbole::evaluator::Evaluator evaluator(es, h.device, dist, d.n_items,
                                              d.train.item_degrees());
      auto rec = evaluator.collect(*m, recbole::tasks::UserRankingSource(d.valid, &d.train));
      const auto evaluated = d.valid.nonempty_users();
      REQUIRE(rec.n_users() == static_cast<int64_t>(evaluated.size()));
      for (size_t r = 0; r < evaluated.size(); ++r)
        for (int j = 0; j < rec.max_k; ++j) {
          const int32_t item = rec.topk_items[r * rec.max_k + j];
          CHECK(item != 0);
          if (item > 0 && !d.valid.contains(evaluated[r], item))
            CHECK_FALSE(d.train.contains(evaluated[r], item));
        }

      // A fixed seed repeats exactly.
      torch::Tensor first = all_scores(*m, h.device, d.n_users);
      no_grad.reset();  // the second model may train
      h.device.seed(h.device.base_seed());
      std::shared_ptr<Model> again = h.create();
      train(*again, d, h.device, h.config);
      again->eval();
      CHECK(torch::equal(all_scores(*again, h.device, d.n_users), first));

      // Save and load into a freshly constructed (unfitted) model: identical scores, no fit().
      std::shared_ptr<Model> loaded = h.create();
      recbole::testing::save_and_load(*m, *loaded, h.device.device());
      CHECK(torch::equal(all_scores(*loaded, h.device, d.n_users), first));
    }
  }
}

TEST_CASE("an unknown model name is a ConfigError listing the known models", "[models]") {
  REQUIRE_NOTHROW(recbole::models::find_model("BPR"));
  try {
    recbole::models::find_model("BRP");
    FAIL("expected ConfigError");
  } catch (const recbole::ConfigError& e) {
    const std::string msg = e.what();
    REQUIRE(msg.find("\"BRP\"") != std::string::npos);
    REQUIRE(msg.find("BPR") != std::string::npos);
    REQUIRE(msg.find("EASE") != std::string::npos);
  }
}

TEST_CASE("a RecBole model not implemented yet is named as such", "[models]") {
  CHECK_THROWS_WITH(recbole::models::find_model("S3Rec"),
                    Catch::Contains("model: S3Rec is a RecBole model not supported yet"));
  CHECK_THROWS_WITH(recbole::models::find_model("S3Recc"),
                    Catch::Contains("model: unknown model \"S3Recc\""));
}

TEST_CASE("docs/models.md lists every registered model with its task and input type", "[models]") {
  std::ifstream in(std::string(RECBOLE_SOURCE_DIR) + "/docs/models.md");
  REQUIRE(in);
  std::set<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.insert(line);
  for (const auto& d : recbole::models::registered_models()) {
    // Test models registered by other test files are not shipped.
    if (d.description.rfind("test:", 0) == 0) continue;
    const std::string prefix = std::string("| ") + d.name + " | " + d.task + " | " +
                               recbole::models::input_type_name(d.input) + " | ";
    INFO(prefix);
    CHECK(std::any_of(rows.begin(), rows.end(),
                      [&](const std::string& r) { return r.rfind(prefix, 0) == 0; }));
  }
}

TEST_CASE("--help text lists models by task with their input type", "[models]") {
  const std::string help = recbole::tasks::models_help_text();
  REQUIRE(help.find("  general:\n") != std::string::npos);
  REQUIRE(help.find("BPR") != std::string::npos);
  REQUIRE(help.find("pairwise") != std::string::npos);
  REQUIRE(help.find("fit once") != std::string::npos);
}

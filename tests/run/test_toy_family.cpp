// A task family defined here, outside the library, trains, evaluates and serves through the
// registries alone: its pipeline (with a part of the model context of its own), a model of the
// family, its section of the checkpoint. Nothing shared names it: run_recbole finds it by the
// model's descriptor, serving by the checkpoint's task.
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/layers/init.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "run/run_recbole.h"
#include "serving/recommender.h"
#include "tasks/general/general_pipeline.h"
#include "tasks/task_family.h"

namespace fs = std::filesystem;

namespace {

// What the toy family gives its models beside the common context: a score offset per item.
struct ItemBonus {
  static constexpr const char* kPart = "the toy family's item bonus";
  torch::Tensor bonus;  // [n_items] float32 CPU
};

// The general task's interactions, plus the item bonus (the item's id parity).
class ToyPipeline : public recbole::tasks::GeneralPipeline {
 public:
  ToyPipeline(const recbole::config::Config& config, const recbole::data::Dataset& dataset,
              const recbole::data::SplitDataset& split)
      : GeneralPipeline(config, split, dataset.n_users(), dataset.n_items()),
        bonus_{torch::arange(dataset.n_items()).remainder(2).to(torch::kFloat32) * 1e-3} {}
  recbole::models::ModelContext model_context(const recbole::DeviceManager& device) const override {
    recbole::models::ModelContext ctx = GeneralPipeline::model_context(device);
    ctx.parts.provide(bonus_);
    return ctx;
  }

 private:
  ItemBonus bonus_;
};

// Matrix factorisation with the family's item bonus added to every score.
class ToyMF : public recbole::models::Model {
 public:
  explicit ToyMF(const recbole::models::ModelContext& ctx)
      : Model("ToyMF", ctx), bonus_(ctx.device.place(ctx.need<ItemBonus>().bonus)) {
    users_ = register_table("users", n_users(), 8, recbole::models::layers::Init::kXavierNormal);
    items_ = register_table("items", n_items(), 8, recbole::models::layers::Init::kXavierNormal);
  }
  torch::Tensor calculate_loss(const recbole::data::Batch& b) override {
    const torch::Tensor u = users_.index_select(0, b.users);
    const torch::Tensor pos = (u * items_.index_select(0, b.items)).sum(-1);
    const torch::Tensor neg = (u * items_.index_select(0, b.neg_items)).sum(-1);
    return -torch::log_sigmoid(pos - neg).mean();
  }
  torch::Tensor full_sort_predict(const recbole::data::Batch& b) override {
    return torch::matmul(users_.index_select(0, b.users), items_.t()) + bonus_;
  }

 private:
  torch::Tensor users_, items_, bonus_;
};

// The family's checkpoint section: the bonus, read back into the query side's model context.
class ToyServing : public recbole::serving::TaskServing {
 public:
  explicit ToyServing(torch::Tensor bonus) : bonus_{std::move(bonus)} {}
  recbole::models::ModelContext model_context(const recbole::config::Config& config,
                                              const recbole::serving::ServingSection& section,
                                              const recbole::DeviceManager& device) const override {
    recbole::models::ModelContext ctx = TaskServing::model_context(config, section, device);
    ctx.parts.provide(bonus_);
    return ctx;
  }

 private:
  ItemBonus bonus_;
};

int sections_written = 0;

void register_toy_family() {
  recbole::tasks::TaskFamily f;
  f.name = "toy";
  f.description = "test: the general task's data and an item bonus";
  f.split = recbole::tasks::interaction_split;
  f.pipeline = [](const recbole::config::Config& config, const recbole::data::Dataset& dataset,
                  const recbole::data::SplitDataset* split) {
    return std::unique_ptr<recbole::tasks::TaskPipeline>(
        std::make_unique<ToyPipeline>(config, dataset, *split));
  };
  f.serving.prepare = [](const recbole::tasks::TaskPipeline& task) {
    const torch::Tensor bonus =
        task.model_context(recbole::DeviceManager{}).need<ItemBonus>().bonus.clone();
    return recbole::serving::SectionWriter([bonus](torch::serialize::OutputArchive& archive) {
      ++sections_written;
      archive.write("bonus", bonus);
    });
  };
  f.serving.load = [](torch::serialize::InputArchive& section,
                      const recbole::serving::ServingSection&, const std::string&) {
    torch::Tensor bonus;
    section.read("bonus", bonus);
    return std::unique_ptr<recbole::serving::TaskServing>(std::make_unique<ToyServing>(bonus));
  };
  recbole::tasks::register_family(std::move(f));
  recbole::models::register_model(
      {"ToyMF",
       "toy",
       recbole::models::InputType::kPairwise,
       "test: matrix factorisation of the toy family",
       {},
       [](const recbole::models::ModelContext& c) { return std::make_shared<ToyMF>(c); }});
}

}  // namespace

TEST_CASE("a task family defined outside the library trains, evaluates and serves",
          "[run][family]") {
  register_toy_family();
  const fs::path dir = fs::temp_directory_path() / "recbole-toy-family";
  fs::remove_all(dir);
  recbole::config::ConfigSources s;
  s.model = "ToyMF";
  s.dataset = "ml-100k";
  s.api_overrides = {{"data_path", std::string(RECBOLE_SHARED_DIR) + "/datasets"},
                     {"epochs", "3"},
                     {"show_progress", "false"},
                     {"checkpoint_dir", (dir / "saved").string()},
                     {"log_dir", (dir / "log").string()}};
  const recbole::RunResult r = recbole::run(recbole::config::Config::build(s));
  CHECK(r.epochs_run == 3);
  REQUIRE(r.test_result.size() == 5);
  for (const auto& [metric, value] : r.test_result) {
    INFO(metric);
    CHECK(value > 0.0);
    CHECK(value <= 1.0);
  }
  CHECK(sections_written >= 1);
  REQUIRE_FALSE(r.checkpoint.empty());

  // Served: the family's section rebuilds the model with its bonus; scores as the model gives.
  const auto rec = recbole::Recommender::load(r.checkpoint);
  CHECK(rec->info().task == "toy");
  CHECK(rec->info().model == "ToyMF");
  const std::vector<recbole::Recommendation> top = rec->recommend("196", 10);
  REQUIRE(top.size() == 10);
  for (size_t k = 1; k < top.size(); ++k) CHECK(top[k - 1].score >= top[k].score);
  fs::remove_all(dir);
}

TEST_CASE("a model whose family's part is missing is told which part", "[run][family]") {
  register_toy_family();
  // ToyMF built with a general context: no item bonus.
  recbole::config::ConfigSources s;
  s.model = "ToyMF";
  s.dataset = "ml-100k";
  const recbole::config::Config config = recbole::config::Config::build(s);
  const recbole::data::InteractionMatrix train(3, 4, {1, 2}, {1, 3});
  recbole::DeviceManager device;
  const recbole::models::ModelContext ctx{config, 3, 4, train, device};
  CHECK_THROWS_WITH(recbole::models::create_model("ToyMF", ctx),
                    Catch::Contains("ToyMF needs the toy family's item bonus"));
}

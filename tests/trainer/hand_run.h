#pragma once
// A whole training run on hand-made train / valid / test pairs, through the general task
// pipeline (no files): the pieces run() builds, kept alive together.
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/split.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/runtime/dist.h"
#include "tasks/general/general_pipeline.h"
#include "tests/models/model_fixture.h"
#include "trainer/evaluator.h"
#include "trainer/trainer.h"

namespace recbole::testing {

using Pairs = std::pair<std::vector<int32_t>, std::vector<int32_t>>;  // (users, items)

// model_config() with the model first defaulted: BPR on "tiny" plus overrides.
inline config::Config tiny_config(std::vector<std::pair<std::string, std::string>> extra = {},
                                  const std::string& model = "BPR") {
  return model_config(model, std::move(extra));
}

// Settings of a CPU device manager.
inline DeviceSettings cpu_device() {
  DeviceSettings s;
  s.device = "cpu";
  return s;
}

inline data::Split split_of(const Pairs& pairs) {
  data::Split s;
  s.users = pairs.first;
  s.items = pairs.second;
  for (size_t k = 0; k < s.users.size(); ++k) s.rows.push_back(static_cast<int64_t>(k));
  return s;
}

// The model config.model() on the pairs (ids from 1; 0 = pad), its weights seeded with `seed`.
struct HandRun {
  // wrap: replaces the training source (a test's decorator around the real one).
  using Wrap =
      std::function<std::unique_ptr<tasks::TrainingSource>(std::unique_ptr<tasks::TrainingSource>)>;

  HandRun(const config::Config& config, int64_t n_users, int64_t n_items, const Pairs& train,
          const Pairs& valid, const Pairs& test, uint64_t seed,
          DeviceSettings device_settings = cpu_device(), const Wrap& wrap = {})
      : dm(device_settings),
        split{split_of(train), split_of(valid), split_of(test)},
        task(config, split, n_users, n_items),
        ctx(task.model_context(dm)),
        model((dm.seed(seed), models::create_model(config.model(), ctx))),
        source(wrapped(task.training_source(model->input_type(), config.model(), 0, 1), wrap)),
        ev(evaluator::evaluator_settings_from_config(config), dm, dist, n_items,
           task.item_train_count()),
        trainer(config, *model, dm, dist, source.get(), ev, {task.valid(), task.test()}) {}

  static std::unique_ptr<tasks::TrainingSource> wrapped(
      std::unique_ptr<tasks::TrainingSource> source, const Wrap& wrap) {
    return wrap && source ? wrap(std::move(source)) : std::move(source);
  }

  DeviceManager dm;
  Dist dist;
  data::SplitDataset split;
  tasks::GeneralPipeline task;
  models::ModelContext ctx;
  std::shared_ptr<models::Model> model;
  std::unique_ptr<tasks::TrainingSource> source;
  evaluator::Evaluator ev;
  trainer::Trainer trainer;
};

}  // namespace recbole::testing

// A sequential or context model stopped part-way through an epoch and resumed ends bit for bit
// where the uninterrupted run ends: the next-item source skips the batches done, negatives
// included, dynamic ones too; the labelled-row source skips its rows in the epoch's order. (The
// general models: test_resume.cpp.)
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/data/dataset.h"
#include "recbole/data/sequence_store.h"
#include "recbole/data/split.h"
#include "recbole/runtime/dist.h"
#include "recbole/utils/stop_signal.h"
#include "tasks/context/context_pipeline.h"
#include "tasks/knowledge/knowledge_pipeline.h"
#include "tasks/sequential/sequential_pipeline.h"
#include "tests/models/model_fixture.h"
#include "tests/trainer/stopping_source.h"
#include "trainer/evaluator.h"
#include "trainer/trainer.h"

namespace fs = std::filesystem;

namespace {

recbole::data::SequenceStore sequences(int64_t max_len) {
  std::vector<int32_t> users, items;
  for (int32_t u = 1; u < 40; ++u)
    for (int32_t k = 0; k < 4 + u % 6; ++k)
      users.push_back(u), items.push_back(1 + (u * 7 + k * (1 + u % 4)) % 29);
  recbole::data::EvalArgs ea;
  ea.split = recbole::data::EvalArgs::SplitKind::kLeaveOneOut;
  ea.order = "TO";
  return recbole::data::SequenceStore::from_ordered(40, users, items, ea, max_len);
}

struct TaskOutcome {
  std::vector<torch::Tensor> params;
  recbole::trainer::FitResult fit;
};

// Trains `model` through `task` from seed 11; stops after the `stop_at`-th batch (0: never);
// resumes from `resume` when given.
TaskOutcome run(const recbole::config::Config& config, const recbole::tasks::TaskPipeline& task,
                int64_t stop_at, const std::string& resume) {
  recbole::clear_stop_request();
  recbole::DeviceSettings settings;
  settings.device = "cpu";
  recbole::DeviceManager dm(settings);
  recbole::Dist dist;
  dm.seed(11);
  const std::string& model = config.model();
  auto m = recbole::models::create_model(model, task.model_context(dm));
  std::unique_ptr<recbole::tasks::TrainingSource> source =
      task.training_source(m->input_type(), model, 0, 1);
  if (stop_at > 0)
    source = std::make_unique<recbole::testing::StoppingSource>(std::move(source), stop_at);
  recbole::evaluator::Evaluator ev(recbole::evaluator::evaluator_settings_from_config(config), dm,
                                   dist, task.n_items(), task.item_train_count());
  recbole::trainer::Trainer trainer(config, *m, dm, dist, source.get(), ev,
                                    {task.valid(), task.test()});
  if (!resume.empty()) trainer.resume(resume);
  TaskOutcome o;
  o.fit = trainer.fit();
  recbole::clear_stop_request();
  for (const auto& p : m->parameters()) o.params.push_back(p.detach().clone());
  return o;
}

// The whole run, a run stopped after `stop_at` batches and its resumption end the same.
void check_resumes(const std::string& name,
                   const std::function<recbole::config::Config(const std::string&)>& config_in,
                   const std::function<TaskOutcome(const recbole::config::Config&, int64_t,
                                                   const std::string&)>& train,
                   int64_t stop_at) {
  const fs::path dir = fs::temp_directory_path() / ("recbole-task-resume-" + name);
  fs::remove_all(dir);
  const TaskOutcome whole = train(config_in((dir / "whole").string()), 0, "");
  const recbole::config::Config stop_config = config_in((dir / "stopped").string());
  const TaskOutcome stopped = train(stop_config, stop_at, "");
  REQUIRE(stopped.fit.stop_signal == SIGTERM);
  const TaskOutcome resumed = train(stop_config, 0, stopped.fit.resume_path);
  REQUIRE(whole.params.size() == resumed.params.size());
  for (size_t k = 0; k < whole.params.size(); ++k)
    CHECK(torch::equal(whole.params[k], resumed.params[k]));
  REQUIRE(whole.fit.history.size() == resumed.fit.history.size());
  for (size_t k = 0; k < whole.fit.history.size(); ++k) {
    CHECK(whole.fit.history[k].train_loss == resumed.fit.history[k].train_loss);
    CHECK(whole.fit.history[k].valid_score == resumed.fit.history[k].valid_score);
  }
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("a sequential model stopped mid-epoch resumes bit for bit",
          "[trainer][resume][sequential]") {
  // BERT4Rec: its masks are drawn from the generator the checkpoint carries.
  // "BPR dynamic": the negatives of dynamic sampling, scored by the model at each batch.
  for (const char* model : {"GRU4Rec", "SASRec", "BERT4Rec"})
    for (const std::string loss : {"CE", "BPR", "BPR dynamic"}) {
      DYNAMIC_SECTION(model << " " << loss) {
        auto config_in = [&](const std::string& dir) {
          std::vector<std::pair<std::string, std::string>> keys = {
              {"epochs", "3"},
              {"train_batch_size", "32"},
              {"stopping_step", "100"},
              {"show_progress", "false"},
              {"MAX_ITEM_LIST_LENGTH", "5"},
              {"loss_type", loss.substr(0, loss.find(' '))},
              {"checkpoint_dir", dir}};
          if (loss == "BPR dynamic")
            keys.emplace_back("train_neg_sample_args",
                              "{distribution: uniform, dynamic: true, candidate_num: 3}");
          return recbole::testing::model_config(model, keys);
        };
        auto train = [](const recbole::config::Config& config, int64_t stop_at,
                        const std::string& resume) {
          const recbole::tasks::SequentialPipeline task(config, sequences(5), 40, 30);
          return run(config, task, stop_at, resume);
        };
        std::string tag = std::string(model) + "-" + loss;
        std::replace(tag.begin(), tag.end(), ' ', '-');
        check_resumes(tag, config_in, train, 5);  // after batch 5
      }
    }
}

namespace {

// `model` on the ml-100k under ../shared with `overrides`, two epochs, no early stop.
recbole::config::Config ml100k_config(const std::string& model, const std::string& dir,
                                      std::vector<std::pair<std::string, std::string>> overrides) {
  recbole::config::ConfigSources s;
  s.model = model;
  s.dataset = "ml-100k";
  s.api_overrides = {{"data_path", std::string(RECBOLE_SHARED_DIR) + "/datasets"},
                     {"epochs", "2"},
                     {"stopping_step", "100"},
                     {"show_progress", "false"},
                     {"checkpoint_dir", dir}};
  for (auto& kv : overrides) s.api_overrides.push_back(std::move(kv));
  return recbole::config::Config::build(s);
}

// A run on the dataset of `config`, loaded and split, through the task's `Pipeline`.
template <typename Pipeline>
auto run_loaded(const recbole::config::Config& config, int64_t stop_at, const std::string& resume) {
  const auto options = recbole::data::DatasetOptions::from_config(config);
  const recbole::data::Dataset dataset = recbole::data::Dataset::load(options);
  const recbole::data::SplitDataset split = recbole::data::split_dataset(dataset, options);
  const Pipeline task(config, dataset, split);
  return run(config, task, stop_at, resume);
}

}  // namespace

TEST_CASE("every context model stopped mid-epoch resumes bit for bit",
          "[trainer][resume][context]") {
  for (const auto& d : recbole::models::registered_models()) {
    if (d.task != "context") continue;
    DYNAMIC_SECTION(d.name) {
      // ml-100k's ratings of 1 and 5 only (labels 0 and 1), 8192 rows a batch: 3 batches an
      // epoch, stopped after the fifth (the second of the second epoch).
      auto config_in = [&](const std::string& dir) {
        return ml100k_config(d.name, dir,
                             {{"val_interval", "{rating: \"[1,1];[5,5]\"}"},
                              {"train_batch_size", "8192"},
                              {"eval_batch_size", "8192"}});
      };
      check_resumes(d.name, config_in, run_loaded<recbole::tasks::ContextPipeline>, 5);
    }
  }
}

TEST_CASE("a context model with dynamic negative sampling stopped mid-epoch resumes bit for bit",
          "[trainer][resume][context]") {
  // FM on the labelled rows with two sampled negatives each, the best of three candidates.
  auto config_in = [&](const std::string& dir) {
    return ml100k_config(
        "FM", dir,
        {{"val_interval", "{rating: \"[1,1];[5,5]\"}"},
         {"train_batch_size", "8192"},
         {"eval_batch_size", "8192"},
         {"train_neg_sample_args",
          "{distribution: uniform, sample_num: 2, dynamic: true, candidate_num: 3}"}});
  };
  check_resumes("FM-dynamic", config_in, run_loaded<recbole::tasks::ContextPipeline>, 5);
}

namespace {

// ml-100k's knowledge preset on its ratings of 5 (about 17k training pairs), 8192 rows a batch
// unless `extra` says otherwise: 3 pairwise batches an epoch, stopped after the fourth (the first
// of the second epoch; for KGAT, the first of its first KG pass), so the KG batches must resume
// too.
void check_knowledge_resumes(const std::string& model,
                             const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  auto config_in = [&](const std::string& dir) {
    // A later override replaces an earlier one of the same key.
    std::vector<std::pair<std::string, std::string>> overrides = {
        {"val_interval", "{rating: \"[5,5]\"}"}, {"train_batch_size", "8192"}};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return ml100k_config(model, dir, overrides);
  };
  check_resumes(model, config_in, run_loaded<recbole::tasks::KnowledgePipeline>, 4);
}

}  // namespace

// MCCLK has a test of its own: its contrastive terms compare every pair of a batch's rows
// (8192 rows: 1 GiB matrices, 40 s a batch), so it runs RecBole's default 2048 rows a batch (9 an
// epoch, stopped mid-way through the first) with 16-wide embeddings.
TEST_CASE("every knowledge model stopped mid-epoch resumes bit for bit",
          "[trainer][resume][knowledge]") {
  for (const auto& d : recbole::models::registered_models()) {
    if (d.task != "knowledge" || d.name == "MCCLK") continue;
    DYNAMIC_SECTION(d.name) { check_knowledge_resumes(d.name); }
  }
}

TEST_CASE("MCCLK stopped mid-epoch resumes bit for bit", "[trainer][resume][knowledge]") {
  check_knowledge_resumes("MCCLK", {{"embedding_size", "16"}, {"train_batch_size", "2048"}});
}

// A sequential model stopped part-way through an epoch and resumed ends bit for bit where the
// uninterrupted run ends: the next-item source skips the batches done, negatives included.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/data/sequence_store.h"
#include "recbole/evaluator/evaluator.h"
#include "recbole/pipeline/sequential_pipeline.h"
#include "recbole/utils/dist.h"
#include "recbole/utils/stop_signal.h"
#include "tests/models/model_fixture.h"
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

// Asks the run to stop when the `stop_at`-th batch is handed out.
class StopAt : public recbole::pipeline::TrainingSource {
 public:
  StopAt(std::unique_ptr<TrainingSource> inner, int64_t stop_at)
      : inner_(std::move(inner)), stop_at_(stop_at) {}
  void start_epoch(int64_t epoch) override { inner_->start_epoch(epoch); }
  bool next(recbole::data::Batch& batch) override {
    if (!inner_->next(batch)) return false;
    if (++handed_ == stop_at_) recbole::request_stop(SIGTERM);
    return true;
  }
  int64_t batches_per_epoch() const override { return inner_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { inner_->skip_batches(n); }

 private:
  std::unique_ptr<TrainingSource> inner_;
  int64_t stop_at_, handed_ = 0;
};

struct Outcome {
  std::vector<torch::Tensor> params;
  recbole::trainer::FitResult fit;
};

Outcome run(const std::string& model, const fs::path& dir, const std::string& loss, int64_t stop_at,
            const std::string& resume) {
  recbole::clear_stop_request();
  const auto config = recbole::testing::model_config(model, {{"epochs", "3"},
                                                             {"train_batch_size", "32"},
                                                             {"stopping_step", "100"},
                                                             {"show_progress", "false"},
                                                             {"MAX_ITEM_LIST_LENGTH", "5"},
                                                             {"loss_type", loss},
                                                             {"checkpoint_dir", dir.string()}});
  recbole::DeviceSettings settings;
  settings.device = "cpu";
  recbole::DeviceManager dm(settings);
  recbole::Dist dist;
  recbole::pipeline::SequentialPipeline task(config, sequences(5), 40, 30);
  dm.seed(11);
  auto m = recbole::models::create_model(model, task.model_context(dm));
  std::unique_ptr<recbole::pipeline::TrainingSource> source =
      task.training_source(m->input_type(), model, 0, 1);
  if (stop_at > 0) source = std::make_unique<StopAt>(std::move(source), stop_at);
  recbole::evaluator::Evaluator ev(recbole::evaluator::evaluator_settings_from_config(config), dm,
                                   dist, 30, task.item_train_count());
  recbole::trainer::Trainer trainer(config, *m, dm, dist, source.get(), ev,
                                    {task.valid(), task.test()});
  if (!resume.empty()) trainer.resume(resume);
  Outcome o;
  o.fit = trainer.fit();
  recbole::clear_stop_request();
  for (const auto& p : m->parameters()) o.params.push_back(p.detach().clone());
  return o;
}

}  // namespace

TEST_CASE("a sequential model stopped mid-epoch resumes bit for bit",
          "[trainer][resume][sequential]") {
  for (const char* model : {"GRU4Rec", "SASRec"})
    for (const char* loss : {"CE", "BPR"}) {
      DYNAMIC_SECTION(model << " " << loss) {
        const fs::path dir =
            fs::temp_directory_path() / ("recbole-seq-resume-" + std::string(model) + "-" + loss);
        fs::remove_all(dir);
        const Outcome whole = run(model, dir / "whole", loss, 0, "");
        const Outcome stopped = run(model, dir / "stopped", loss, 5, "");  // after the fifth batch
        REQUIRE(stopped.fit.stop_signal == SIGTERM);
        const Outcome resumed = run(model, dir / "stopped", loss, 0, stopped.fit.resume_path);
        REQUIRE(whole.params.size() == resumed.params.size());
        for (size_t k = 0; k < whole.params.size(); ++k)
          CHECK(torch::equal(whole.params[k], resumed.params[k]));
        REQUIRE(whole.fit.history.size() == resumed.fit.history.size());
        for (size_t k = 0; k < whole.fit.history.size(); ++k)
          CHECK(whole.fit.history[k].train_loss == resumed.fit.history[k].train_loss);
        fs::remove_all(dir);
      }
    }
}

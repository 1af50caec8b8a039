// The trainer's rules on hand-made runs: the best checkpoint, early stopping, NaN losses,
// checkpoint failures.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include <torch/torch.h>

#include "recbole/utils/error.h"
#include "tests/trainer/hand_run.h"

using recbole::testing::HandRun;
using recbole::testing::tiny_config;

TEST_CASE("BPR trains, keeps the best checkpoint and reloads it for the test", "[trainer]") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "recbole_trainer_ckpt").string();
  std::filesystem::remove_all(dir);
  for (const char* fast : {"true", "false"}) {
    auto config = tiny_config({{"epochs", "4"},
                               {"train_batch_size", "4"},
                               {"checkpoint_dir", dir},
                               {"fast_bpr", fast},
                               {"embedding_size", "8"}});
    HandRun run(config, 4, 8, {{1, 1, 2, 2, 3, 3, 1, 2}, {1, 2, 3, 4, 5, 6, 3, 1}},
                {{1, 2, 3}, {4, 5, 1}}, {{1, 2, 3}, {5, 6, 2}}, 1);
    REQUIRE(run.trainer.uses_fast_epoch() == (std::string(fast) == "true"));
    auto fit = run.trainer.fit();
    REQUIRE(fit.epochs_run >= 1);
    REQUIRE(fit.epochs_run <= 4);
    REQUIRE(fit.best_valid_score.has_value());
    REQUIRE(std::filesystem::exists(fit.checkpoint_path));
    // Reloading the best checkpoint into a fresh model gives the same test metrics.
    auto after = run.trainer.test(true);
    run.dm.seed(99);
    auto fresh = recbole::models::create_model("BPR", run.ctx);
    recbole::trainer::Trainer t2(config, *fresh, run.dm, run.dist, run.source.get(), run.ev,
                                 {run.task.valid(), run.task.test()});
    t2.load_checkpoint(fit.checkpoint_path);
    REQUIRE(t2.test(false) == after);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("The checkpoint holds the best epoch's model, not the last one's", "[trainer]") {
  // stopping_step 0 stops at the first evaluation without improvement (ties improve), so the
  // last epoch is strictly worse than the best: the best model is written, although it was
  // kept in memory between writes (Trainer::keep_best).
  const std::string dir =
      (std::filesystem::temp_directory_path() / "recbole_trainer_best").string();
  std::filesystem::remove_all(dir);
  for (const char* fast : {"true", "false"}) {
    auto config = tiny_config({{"epochs", "200"},
                               {"train_batch_size", "2"},
                               {"checkpoint_dir", dir},
                               {"fast_bpr", fast},
                               {"embedding_size", "8"},
                               {"learning_rate", "0.05"},
                               {"stopping_step", "0"},
                               {"valid_metric", "ndcg@3"},
                               {"topk", "3"}});
    HandRun run(config, 6, 10,
                {{1, 1, 2, 2, 3, 3, 1, 2, 4, 4, 5, 5}, {1, 2, 3, 4, 5, 6, 3, 1, 7, 2, 4, 8}},
                {{1, 2, 3, 4, 5}, {4, 5, 1, 9, 2}}, {{1, 2, 3, 4, 5}, {5, 6, 2, 3, 9}}, 3);
    auto ndcg = [&] {
      for (const auto& [k, v] : run.trainer.validate())
        if (k == "ndcg@3") return v;
      FAIL("ndcg@3 not computed");
      return 0.0;
    };
    auto fit = run.trainer.fit();
    REQUIRE(fit.best_epoch + 1 < fit.epochs_run);  // stopped after a worse epoch
    REQUIRE(ndcg() < *fit.best_valid_score);
    run.trainer.load_checkpoint(fit.checkpoint_path);
    REQUIRE(ndcg() == Approx(*fit.best_valid_score).epsilon(1e-12));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a diverging run stops with the loss-is-nan error on the fused path as on the generic",
          "[trainer]") {
  // learning_rate 1e30 sends the weights to inf and the scores to NaN within an epoch or two.
  // The fused path's clamp of the scores used to turn NaN into a finite (and negative) loss.
  for (const char* fast : {"true", "false"}) {
    INFO("fast_bpr " << fast);
    auto config =
        tiny_config({{"epochs", "4"},
                     {"train_batch_size", "4"},
                     {"fast_bpr", fast},
                     {"embedding_size", "8"},
                     {"learning_rate", "1e30"},
                     {"eval_step", "0"},
                     {"checkpoint_dir",
                      (std::filesystem::temp_directory_path() / "recbole_diverge").string()}});
    HandRun run(config, 4, 8, {{1, 1, 2, 2, 3, 3, 1, 2}, {1, 2, 3, 4, 5, 6, 3, 1}},
                {{1, 2, 3}, {4, 5, 1}}, {{1, 2, 3}, {5, 6, 2}}, 1);
    REQUIRE(run.trainer.uses_fast_epoch() == (std::string(fast) == "true"));
    REQUIRE_THROWS_WITH(run.trainer.fit(), Catch::Contains("Training loss is nan at epoch"));
  }
}

TEST_CASE("sample_num above train_batch_size is a ConfigError naming both keys", "[trainer]") {
  // It used to make batches of one positive and sample_num rows (24 GB at sample_num 10^9).
  auto config = tiny_config({{"train_batch_size", "4"},
                             {"train_neg_sample_args", "{distribution: uniform, sample_num: 5}"}});
  auto make = [&] {
    HandRun run(config, 4, 8, {{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1}, {5}}, {{2}, {6}}, 1);
  };
  REQUIRE_THROWS_AS(make(), recbole::ConfigError);
  REQUIRE_THROWS_WITH(make(), Catch::Contains("sample_num 5 is larger than train_batch_size 4"));
  config = tiny_config({{"train_batch_size", "4"},
                        {"train_neg_sample_args", "{distribution: uniform, sample_num: 4}"}});
  REQUIRE_NOTHROW(make());
}

namespace {

// Passes the batches of the real source through, but draws no dynamic negatives (as a source
// that samples none, the user rows', does not).
class StaticOnlySource : public recbole::tasks::TrainingSource {
 public:
  explicit StaticOnlySource(std::unique_ptr<TrainingSource> inner) : inner_(std::move(inner)) {}
  void start_epoch(int64_t epoch) override { inner_->start_epoch(epoch); }
  bool next(recbole::data::Batch& batch) override { return inner_->next(batch); }
  int64_t batches_per_epoch() const override { return inner_->batches_per_epoch(); }
  void skip_batches(int64_t n) override { inner_->skip_batches(n); }

 private:
  std::unique_ptr<TrainingSource> inner_;
};

}  // namespace

TEST_CASE("dynamic negative sampling trains pairwise and pointwise models, refused elsewhere",
          "[trainer]") {
  const std::string dynamic = "{distribution: uniform, dynamic: true, candidate_num: 3}";
  // BPR's fused epoch cannot score candidates with the model: the generic path trains instead.
  for (const char* model : {"BPR", "NeuMF"}) {
    INFO(model);
    std::vector<std::pair<std::string, std::string>> keys = {
        {"epochs", "2"}, {"train_batch_size", "4"}, {"train_neg_sample_args", dynamic}};
    if (std::string(model) == "BPR") keys.emplace_back("fast_bpr", "true");
    auto config = tiny_config(keys, model);
    HandRun run(config, 4, 8, {{1, 1, 2, 2, 3, 3}, {1, 2, 3, 4, 5, 6}}, {{1, 2}, {5, 1}},
                {{1, 2}, {6, 2}}, 1);
    REQUIRE_FALSE(run.trainer.uses_fast_epoch());
    REQUIRE(run.trainer.fit().epochs_run == 2);
  }
  // A source that does not draw that way refuses the option rather than sampling statically,
  // which would give another model than the user asked for without a word.
  auto config = tiny_config({{"train_batch_size", "4"}, {"train_neg_sample_args", dynamic}});
  auto make = [&] {
    HandRun run(config, 4, 8, {{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1}, {5}}, {{2}, {6}}, 1,
                recbole::testing::cpu_device(),
                [](auto inner) { return std::make_unique<StaticOnlySource>(std::move(inner)); });
  };
  REQUIRE_THROWS_AS(make(), recbole::ConfigError);
  REQUIRE_THROWS_WITH(make(), Catch::Contains("train_neg_sample_args.dynamic: true") &&
                                  Catch::Contains("BPR's training source") &&
                                  Catch::Contains("not supported yet"));
  config = tiny_config(
      {{"train_batch_size", "4"},
       {"train_neg_sample_args", "{distribution: uniform, dynamic: false, candidate_num: 3}"}});
  REQUIRE_NOTHROW(make());
}

TEST_CASE("a checkpoint that cannot be written is an Error, and the previous one stays",
          "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / "recbole_ckpt_fail";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto config = tiny_config({{"epochs", "1"},
                             {"train_batch_size", "4"},
                             {"embedding_size", "8"},
                             {"checkpoint_dir", dir.string()}});
  HandRun run(config, 4, 8, {{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1}, {5}}, {{2}, {6}}, 1);
  const std::string path = (dir / "model.pth").string();
  run.trainer.save_checkpoint(path);
  const auto size = std::filesystem::file_size(path);
  // The temporary file's path is taken (a full disk gave libtorch's writer an error it threw
  // from a destructor: std::terminate).
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp);
  REQUIRE_THROWS_AS(run.trainer.save_checkpoint(path), recbole::Error);
  std::filesystem::create_directories(tmp);
  REQUIRE_THROWS_WITH(run.trainer.save_checkpoint(path),
                      Catch::Contains("cannot write the checkpoint " + path));
  REQUIRE(std::filesystem::file_size(path) == size);
  run.trainer.load_checkpoint(path);  // still a whole checkpoint
  std::filesystem::remove_all(dir);
}

TEST_CASE("early stopping on a loss that never left its first value is named with the key",
          "[trainer]") {
  using recbole::trainer::EpochRecord;
  using recbole::trainer::flat_loss_warning;
  auto history = [](std::vector<double> losses) {
    std::vector<EpochRecord> h;
    for (size_t e = 0; e < losses.size(); ++e) {
      EpochRecord r;
      r.epoch = static_cast<int64_t>(e);
      r.train_loss = losses[e];
      h.push_back(r);
    }
    return h;
  };
  // NCL on ml-100k, seed 2021: 14 epochs between 27.7559 and 27.6281 (0.5 %), then stopped.
  const auto warning =
      flat_loss_warning(history({27.7559, 27.74, 27.73, 27.72, 27.70, 27.68, 27.6281}), 10);
  REQUIRE(warning);
  CHECK_THAT(*warning, Catch::Contains("after 7 epochs") && Catch::Contains("27.7559") &&
                           Catch::Contains("last 27.6281") &&
                           Catch::Contains("stopping_step (now 10)"));
  // Just inside and just outside 2 %, either way; negative losses by their magnitude.
  CHECK(flat_loss_warning(history({10.0, 9.81, 10.19}), 5));
  CHECK_FALSE(flat_loss_warning(history({10.0, 9.79}), 5));
  CHECK_FALSE(flat_loss_warning(history({10.0, 10.21}), 5));
  CHECK(flat_loss_warning(history({-10.0, -10.1}), 5));
  // A learning run (LightGCN: 27.6 to 19.8 by epoch 3), nothing to judge, or no scale.
  CHECK_FALSE(flat_loss_warning(history({27.6024, 24.1, 19.8}), 10));
  CHECK_FALSE(flat_loss_warning({}, 10));
  CHECK_FALSE(flat_loss_warning(history({0.0, 0.0}), 10));
  CHECK_FALSE(flat_loss_warning(history({std::nan(""), 1.0}), 10));
  CHECK_FALSE(flat_loss_warning(history({1.0, std::nan("")}), 10));
}

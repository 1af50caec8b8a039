// Stopping and resuming in one process: a run stopped part-way (a stop request after some batch)
// and resumed from its resume checkpoint ends bit for bit where the uninterrupted run ends, for
// every trainable model; the checkpoint refuses what does not fit.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "recbole/runtime/checkpoint_file.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/stop_signal.h"
#include "tests/trainer/hand_run.h"
#include "tests/trainer/stopping_source.h"
#include "trainer/resume_checkpoint.h"

namespace fs = std::filesystem;
using recbole::testing::HandRun;
using recbole::testing::Pairs;
using recbole::testing::TinyData;

namespace {

using recbole::testing::StoppingSource;

// Asks for the stop when `epoch` starts: the run stops after that epoch's first batch. (The
// fused BPR path takes its batches from the batcher itself, not through next().)
class StopAtEpoch : public StoppingSource {
 public:
  StopAtEpoch(std::unique_ptr<TrainingSource> inner, int64_t epoch)
      : StoppingSource(std::move(inner), -1), epoch_(epoch) {}
  void start_epoch(int64_t epoch) override {
    StoppingSource::start_epoch(epoch);
    if (epoch == epoch_) recbole::request_stop(SIGTERM);
  }

 private:
  int64_t epoch_;
};

HandRun::Wrap stop_after_batch(int64_t n) {
  return [n](std::unique_ptr<recbole::tasks::TrainingSource> s) {
    return std::make_unique<StoppingSource>(std::move(s), n);
  };
}

HandRun::Wrap stop_in_epoch(int64_t epoch) {
  return [epoch](std::unique_ptr<recbole::tasks::TrainingSource> s) {
    return std::make_unique<StopAtEpoch>(std::move(s), epoch);
  };
}

struct TinyPairs {
  Pairs train, valid, test;
  TinyPairs() {
    TinyData d;
    for (int32_t u = 1; u < d.n_users; ++u) {
      for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it)
        train.first.push_back(u), train.second.push_back(*it);
      for (const int32_t* it = d.valid.row_begin(u); it != d.valid.row_end(u); ++it)
        valid.first.push_back(u), valid.second.push_back(*it);
      test.first.push_back(u), test.second.push_back(1 + (u * 5 + 3) % 26);
    }
  }
};

std::vector<torch::Tensor> parameters_of(recbole::models::Model& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  for (const auto& b : m.buffers()) out.push_back(b.clone());
  return out;
}

bool identical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].defined() || !b[k].defined() ? a[k].defined() != b[k].defined()
                                           : !torch::equal(a[k], b[k]))
      return false;
  return true;
}

struct Outcome {
  std::vector<torch::Tensor> params;
  recbole::evaluator::MetricValues test;
  recbole::trainer::FitResult fit;
};

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("recbole-resume-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

class Runner {
 public:
  // tag: the test's own folder (CTest may run test cases side by side).
  Runner(const std::string& tag, std::string model,
         std::vector<std::pair<std::string, std::string>> extra = {})
      : model_(std::move(model)), extra_(std::move(extra)), dir_(fresh_dir(tag + "-" + model_)) {}

  const fs::path& dir() const { return dir_; }

  recbole::config::Config config(const std::string& sub) const {
    std::vector<std::pair<std::string, std::string>> kv = {
        {"epochs", "3"},
        {"train_batch_size", "64"},
        {"eval_step", "1"},
        {"stopping_step", "100"},
        {"show_progress", "false"},
        {"checkpoint_dir", (dir_ / sub).string()}};
    kv.insert(kv.end(), extra_.begin(), extra_.end());
    return recbole::testing::tiny_config(kv, model_);
  }

  // A run from the start, or from `resume`; `wrap` may stop it.
  Outcome run(const std::string& sub, const std::string& resume = "",
              const HandRun::Wrap& wrap = {}) {
    recbole::clear_stop_request();
    const auto cfg = config(sub);
    HandRun r(cfg, 40, 30, data_.train, data_.valid, data_.test, 7, recbole::testing::cpu_device(),
              wrap);
    if (!resume.empty()) r.trainer.resume(resume);
    Outcome o;
    o.fit = r.trainer.fit();
    recbole::clear_stop_request();
    if (o.fit.stop_signal == 0) o.test = r.trainer.test();
    o.params = parameters_of(*r.model);
    return o;
  }

 private:
  std::string model_;
  std::vector<std::pair<std::string, std::string>> extra_;
  fs::path dir_;
  TinyPairs data_;
};

void check_same_end(const Outcome& whole, const Outcome& resumed) {
  CHECK(identical(whole.params, resumed.params));
  CHECK(whole.test == resumed.test);
  CHECK(whole.fit.best_epoch == resumed.fit.best_epoch);
  CHECK(whole.fit.best_valid_result == resumed.fit.best_valid_result);
  REQUIRE(whole.fit.history.size() == resumed.fit.history.size());
  for (size_t k = 0; k < whole.fit.history.size(); ++k) {
    CHECK(whole.fit.history[k].train_loss == resumed.fit.history[k].train_loss);
    CHECK(whole.fit.history[k].valid_score == resumed.fit.history[k].valid_score);
  }
}

// Stopped by `first`, resumed and stopped by `second`, resumed to the end: the same end as the
// whole run (returned).
Outcome check_stopped_twice(Runner& runner, const HandRun::Wrap& first,
                            const HandRun::Wrap& second) {
  const Outcome whole = runner.run("whole");
  const Outcome a = runner.run("a", "", first);
  REQUIRE(a.fit.stop_signal == SIGTERM);
  const Outcome b = runner.run("a", a.fit.resume_path, second);
  REQUIRE(b.fit.stop_signal == SIGTERM);
  CHECK(b.fit.resume_path != a.fit.resume_path);
  check_same_end(whole, runner.run("a", b.fit.resume_path));
  return whole;
}

}  // namespace

TEST_CASE("every trainable model stopped part-way through an epoch resumes bit for bit",
          "[trainer][resume]") {
  const std::map<std::string, std::vector<std::pair<std::string, std::string>>> fit_tiny = {
      {"NCL", {{"num_clusters", "8"}}}};
  for (const auto& d : recbole::models::registered_models()) {
    if (d.input == recbole::models::InputType::kFitOnce) continue;
    // Sequential and context models: test_task_resume.cpp (their pipelines are not the general
    // one).
    if (d.task != "general") continue;
    DYNAMIC_SECTION(d.name) {
      const auto extra = fit_tiny.count(d.name)
                             ? fit_tiny.at(d.name)
                             : std::vector<std::pair<std::string, std::string>>{};
      Runner runner("every", d.name, extra);
      const Outcome whole = runner.run("whole");
      REQUIRE(whole.fit.stop_signal == 0);
      // Stopped after the first batch of epoch 1 (for RecVAE: of its second pass): the hooks
      // of the epoch that resumes must not run again.
      const Outcome stopped = runner.run("stopped", "", stop_in_epoch(1));
      REQUIRE(stopped.fit.stop_signal == SIGTERM);
      REQUIRE_FALSE(stopped.fit.resume_path.empty());
      const Outcome resumed = runner.run("resumed", stopped.fit.resume_path);
      check_same_end(whole, resumed);
    }
  }
}

TEST_CASE("the fused BPR path stops and resumes bit for bit, also when stopped twice",
          "[trainer][resume]") {
  Runner runner("fused", "BPR", {{"epochs", "4"}, {"train_batch_size", "16"}});
  check_stopped_twice(runner, stop_in_epoch(1), stop_in_epoch(2));
}

TEST_CASE("the generic path stopped twice, and stopped before its first batch, resumes exactly",
          "[trainer][resume]") {
  Runner runner("generic", "BPR", {{"fast_bpr", "false"}, {"train_batch_size", "32"}});
  const Outcome whole = check_stopped_twice(runner, stop_after_batch(3), stop_after_batch(5));

  // A request before training: the checkpoint is of epoch 0, and resuming it is a whole run.
  const Outcome early = runner.run("b", "", [](auto s) {
    recbole::request_stop(SIGINT);
    return s;
  });
  REQUIRE(early.fit.stop_signal == SIGINT);
  CHECK(early.fit.history.empty());
  check_same_end(whole, runner.run("b", early.fit.resume_path));
}

TEST_CASE("dynamic negative sampling stopped twice resumes bit for bit", "[trainer][resume]") {
  // The candidates come from a stream keyed by the batch's position, not from a running state.
  for (const char* model : {"BPR", "NeuMF"}) {
    DYNAMIC_SECTION(model) {
      Runner runner(
          "dynamic", model,
          {{"train_batch_size", "32"},
           {"train_neg_sample_args", "{distribution: uniform, dynamic: true, candidate_num: 3}"}});
      check_stopped_twice(runner, stop_after_batch(3), stop_after_batch(5));
    }
  }
}

TEST_CASE("checkpoint_keep bounds a run's resume checkpoints, 0 removes them at the end",
          "[trainer][resume]") {
  auto files = [](const fs::path& dir, int* resume, int* best) {
    *resume = *best = 0;
    for (const auto& e : fs::directory_iterator(dir))
      (e.path().filename().string().find("-resume-") != std::string::npos ? *resume : *best)++;
  };
  int resume = 0, best = 0;
  {
    // Three stops (each written before fit() returns), resumed in turn: the newest two stay.
    Runner runner("keep2", "BPR", {{"epochs", "5"}, {"checkpoint_keep", "2"}});
    std::string path;
    for (int epoch : {1, 2, 3}) {
      const Outcome o = runner.run("k", path, stop_in_epoch(epoch));
      REQUIRE(o.fit.stop_signal == SIGTERM);
      path = o.fit.resume_path;
    }
    files(runner.dir() / "k", &resume, &best);
    CHECK(resume == 2);
    CHECK(best == 1);
    CHECK(fs::exists(path));
  }
  {
    Runner runner("keep0", "BPR", {{"epochs", "4"}, {"checkpoint_keep", "0"}});
    runner.run("k");
    files(runner.dir() / "k", &resume, &best);
    CHECK(resume == 0);
    CHECK(best == 1);
  }
}

TEST_CASE("a resume checkpoint that does not fit is refused with the key or the file named",
          "[trainer][resume]") {
  Runner runner("refuse", "BPR", {{"epochs", "2"}});
  const Outcome stopped = runner.run("a", "", stop_in_epoch(1));
  const std::string path = stopped.fit.resume_path;
  const recbole::trainer::ResumeHeader header = recbole::trainer::read_resume_header(path);
  CHECK(header.point.epoch == 1);
  CHECK(header.model == "BPR");

  // Keys that may change: fine. Others: a ConfigError naming the key and both values.
  auto cfg = runner.config("a");
  cfg.set("epochs", "50");
  cfg.set("stopping_step", "3");
  CHECK_NOTHROW(recbole::trainer::check_resume_compatible(header, cfg, 1, path));
  cfg.set("learning_rate", "0.5");
  CHECK_THROWS_WITH(recbole::trainer::check_resume_compatible(header, cfg, 1, path),
                    Catch::Contains("learning_rate is 0.5") && Catch::Contains("0.001") &&
                        Catch::Contains("may change on resume"));
  CHECK_THROWS_WITH(recbole::trainer::check_resume_compatible(header, runner.config("a"), 2, path),
                    Catch::Contains("1 process(es); this run has 2"));

  // A truncated file, and a file of another format.
  const std::string cut = path + ".cut.pth";
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THROWS_WITH(recbole::trainer::read_resume_header(cut),
                    Catch::Contains(cut) && Catch::Contains("cut short") &&
                        Catch::Contains("use an older resume checkpoint"));
  // One byte changed in the middle: the checksum catches it before libtorch parses the file.
  const std::string flipped = path + ".flipped.pth";
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
    std::ofstream(flipped, std::ios::binary) << bytes;
  }
  CHECK_THROWS_WITH(recbole::trainer::read_resume_header(flipped),
                    Catch::Contains(flipped) && Catch::Contains("checksum does not match"));
  // libtorch's own file, without the trailer: not a recbole-cpp checkpoint.
  const std::string bare = path + ".bare.pth";
  {
    torch::serialize::OutputArchive a;
    a.write("resume_meta", c10::IValue(std::string(R"({"format": 1})")));
    a.save_to(bare);
  }
  CHECK_THROWS_WITH(recbole::trainer::read_resume_header(bare),
                    Catch::Contains(bare) && Catch::Contains("no checksum trailer"));
  const std::string future = path + ".v99.pth";
  {
    auto a = std::make_shared<torch::serialize::OutputArchive>();
    a->write("resume_meta", c10::IValue(std::string(R"({"format": 99})")));
    recbole::write_file_atomically(future, recbole::trainer::checkpoint_bytes(a));
  }
  CHECK_THROWS_WITH(recbole::trainer::read_resume_header(future),
                    Catch::Contains("format 99") && Catch::Contains(future));
  // The best-model checkpoint is not a resume checkpoint.
  CHECK_THROWS_WITH(recbole::trainer::read_resume_header(stopped.fit.checkpoint_path),
                    Catch::Contains("not a resume checkpoint"));
}

TEST_CASE("resume checkpoints write metric values as the result file does, and read format 1's",
          "[trainer][resume]") {
  using namespace recbole::trainer;
  FitResult result;
  result.best_valid_score = 0.25;
  // Not in the names' order: the order must come back as the evaluator gave it.
  result.best_valid_result = {{"recall@10", 0.25}, {"mrr@10", 0.5}, {"hit@10", 0.75}};
  result.epochs_run = 3;
  result.best_epoch = 1;
  result.train_seconds = {1.0, 2.0, 3.0};
  result.eval_seconds = {0.5};
  result.checkpoint_path = "dir/BPR-x.pth";
  EpochRecord record;
  record.epoch = 1;
  record.train_loss = 0.7;
  record.valid_score = 0.25;
  record.valid_result = result.best_valid_result;
  result.history = {record};
  ResumeHeader header;
  header.model = "BPR";
  header.dataset = "ml-100k";
  header.config_yaml = "seed: 2020\n";
  header.point = {3, 0, 5};
  header.run = "dir/BPR-x";
  const LoopState loop{1.5, 0.125, 0.25, 2};

  const nlohmann::ordered_json meta = resume_meta_json(header, loop, result, 1, 4);
  CHECK(meta.at("format") == kResumeFormat);
  CHECK(meta.at("best_valid_result").dump() == R"({"recall@10":0.25,"mrr@10":0.5,"hit@10":0.75})");
  // Format 1 (before the result file's shape): best_valid_result as [[name, value], ...].
  nlohmann::ordered_json old = meta;
  old["format"] = 1;
  old["best_valid_result"] = nlohmann::ordered_json::array();
  for (const auto& [k, v] : result.best_valid_result) old["best_valid_result"].push_back({k, v});
  for (const nlohmann::ordered_json& written : {meta, old}) {
    INFO("format " << written.at("format"));
    FitResult got;
    const LoopState l = read_resume_meta(nlohmann::ordered_json::parse(written.dump()), got);
    CHECK(got.best_valid_result == result.best_valid_result);
    CHECK(got.best_valid_score == result.best_valid_score);
    CHECK(got.epochs_run == 3);
    CHECK(got.best_epoch == 1);
    CHECK(got.train_seconds == result.train_seconds);
    CHECK(got.eval_seconds == result.eval_seconds);
    CHECK(got.checkpoint_path == result.checkpoint_path);
    REQUIRE(got.history.size() == 1);
    CHECK(got.history[0].train_loss == 0.7);
    CHECK(got.history[0].valid_score == 0.25);
    CHECK(l.epoch_loss == 1.5);
    CHECK(l.epoch_seconds == 0.125);
    CHECK(l.best_score == 0.25);
    CHECK(l.cur_step == 2);
  }

  // A file of format 1 passes the header check; one of format 0 does not.
  const fs::path dir = fresh_dir("format1");
  for (int64_t format : {int64_t{1}, int64_t{0}}) {
    nlohmann::ordered_json m = old;
    m["format"] = format;
    const std::string path = (dir / ("v" + std::to_string(format) + ".pth")).string();
    auto a = std::make_shared<torch::serialize::OutputArchive>();
    a->write("resume_meta", c10::IValue(m.dump()));
    recbole::write_file_atomically(path, checkpoint_bytes(a));
    if (format == kOldestResumeFormat) {
      const ResumeHeader h = read_resume_header(path);
      CHECK(h.format == 1);
      CHECK(h.run == "dir/BPR-x");
      CHECK(h.point.batch == 5);
    } else {
      CHECK_THROWS_WITH(read_resume_header(path),
                        Catch::Contains("format 0") && Catch::Contains("reads formats 1 to"));
    }
  }
  fs::remove_all(dir);
}

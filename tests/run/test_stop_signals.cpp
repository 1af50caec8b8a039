// recbole_run under signals, as a scheduler or a user sends them: SIGTERM and SIGINT stop it
// cleanly (exit 143 / 130, a result marked interrupted, the resume command in the log's last
// line) and --resume continues to the uninterrupted run's metrics; a second signal exits at once;
// SIGKILL at any moment leaves only whole, loadable checkpoints; --nproc=2 stops every rank.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "recbole/runtime/checkpoint_file.h"
#include "tests/distributed/dist_test_util.h"
#include "trainer/resume_checkpoint.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kData = std::string(RECBOLE_SHARED_DIR) + "/datasets";

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// recbole_run with `args`, its stdout and stderr to a file in `dir` (started as the distributed
// tests start processes: no launcher variables inherited).
class Process {
 public:
  Process(const fs::path& dir, const std::vector<std::string>& args) : out_(dir / "out.txt") {
    std::vector<std::string> argv = {recbole::testing::kRun};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = recbole::testing::start(argv, {}, out_.string()).pid;
  }
  // Until the output contains `text` (false when the process ended or 60 s passed first).
  bool wait_for(const std::string& text) {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < end) {
      if (read_file(out_).find(text) != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        return read_file(out_).find(text) != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // The processes this one started (the --nproc launcher's ranks), in start order.
  std::vector<pid_t> children() const {
    std::istringstream in(
        read_file("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children"));
    std::vector<pid_t> pids;
    for (pid_t p; in >> p;) pids.push_back(p);
    return pids;
  }
  // The exit status (128 + signal for a process killed by one).
  int wait() {
    if (status_ < 0) REQUIRE(::waitpid(pid_, &status_, 0) == pid_);
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  std::string output() const { return read_file(out_); }

 private:
  fs::path out_;
  pid_t pid_ = -1;
  int status_ = -1;
};

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("recbole-signals-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// BPR on ml-100k; each run in its own folder under `dir`.
std::vector<std::string> bpr_args(const fs::path& dir, const std::string& result, int epochs,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--model=BPR",
                                "--dataset=ml-100k",
                                "--data_path=" + kData,
                                "--epochs=" + std::to_string(epochs),
                                "--stopping_step=1000",
                                "--show_progress=false",
                                "--checkpoint_dir=" + (dir / "saved").string(),
                                "--log_dir=" + (dir / "log").string(),
                                "--result_file=" + (dir / result).string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

nlohmann::json result(const fs::path& p) { return nlohmann::json::parse(read_file(p)); }

// The path in the log's last line "... resume with --resume=PATH".
std::string resume_from_log(const std::string& output) {
  std::string last;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) last = line;
  const std::string tag = "resume with --resume=";
  const auto at = last.find(tag);
  REQUIRE(at != std::string::npos);
  return last.substr(at + tag.size());
}

}  // namespace

TEST_CASE("SIGTERM and SIGINT stop recbole_run cleanly, and --resume ends where the whole run does",
          "[tool][signals]") {
  for (const auto& [sig, code] : {std::pair{SIGTERM, 143}, std::pair{SIGINT, 130}}) {
    DYNAMIC_SECTION("signal " << sig) {
      const fs::path dir = fresh("stop-" + std::to_string(sig));
      const int epochs = 25;
      Process whole(dir, bpr_args(dir, "whole.json", epochs));
      REQUIRE(whole.wait() == 0);

      Process stopped(dir, bpr_args(dir, "stopped.json", epochs,
                                    {"--report=" + (dir / "stopped.html").string()}));
      REQUIRE(stopped.wait_for("epoch 5 training"));
      stopped.signal(sig);
      REQUIRE(stopped.wait() == code);
      const nlohmann::json s = result(dir / "stopped.json");
      CHECK(s.at("interrupted") == true);
      CHECK(s.at("epochs_run").get<int>() >= 6);
      CHECK(s.at("epochs_run").get<int>() < epochs);
      CHECK(s.at("history").size() == s.at("epochs_run").get<size_t>());
      const std::string path = resume_from_log(stopped.output());
      CHECK(s.at("resume_checkpoint") == path);
      // The report of the stopped run says so.
      const std::string report = read_file(dir / "stopped.html");
      CHECK(report.find("Interrupted by ") != std::string::npos);
      CHECK(report.find("--resume=" + path) != std::string::npos);

      std::vector<std::string> args = bpr_args(dir, "resumed.json", epochs);
      args.push_back("--resume=" + path);
      Process resumed(dir, args);
      REQUIRE(resumed.wait() == 0);
      const nlohmann::json w = result(dir / "whole.json"), r = result(dir / "resumed.json");
      CHECK(r.at("interrupted") == false);
      CHECK(r.at("test_result") == w.at("test_result"));
      CHECK(r.at("best_valid_result") == w.at("best_valid_result"));
      CHECK(r.at("history").size() == w.at("history").size());
    }
  }
}

TEST_CASE("a second signal ends recbole_run at once", "[tool][signals]") {
  const fs::path dir = fresh("twice");
  Process p(dir, bpr_args(dir, "r.json", 1000));
  REQUIRE(p.wait_for("epoch 2 training"));
  // Two different signals: two of one kind sent at once may merge into one pending signal.
  // (Threads may take them in either order: the exit status is the second one's.)
  p.signal(SIGINT);
  p.signal(SIGTERM);
  const int code = p.wait();
  CHECK((code == 130 || code == 143));
  CHECK_THAT(p.output(), Catch::Contains("second stop signal: exiting at once"));
}

TEST_CASE("a changed key on --resume is refused by name before any work", "[tool][signals]") {
  const fs::path dir = fresh("changed");
  Process p(dir, bpr_args(dir, "r.json", 1000));
  REQUIRE(p.wait_for("epoch 2 training"));
  p.signal(SIGTERM);
  REQUIRE(p.wait() == 143);
  const std::string path = resume_from_log(p.output());
  std::vector<std::string> args = bpr_args(dir, "r2.json", 1000);
  args.push_back("--resume=" + path);
  args.push_back("--learning_rate=0.01");
  Process q(dir, args);
  CHECK(q.wait() == 1);
  CHECK_THAT(q.output(),
             Catch::Contains("learning_rate is 0.01") && Catch::Contains("may change on resume"));
}

TEST_CASE("SIGKILL at 20 moments leaves only whole checkpoints, and resume: latest completes",
          "[tool][signals]") {
  std::mt19937 rng(2026);
  // Counted from the end of the first epoch, not from the start: loading libtorch and the data
  // takes from 0.2 s to over a second on a busy machine, and the kills are meant for training.
  std::uniform_int_distribution<int> delay_ms(0, 400);
  int resumed_from_checkpoint = 0;
  for (int k = 0; k < 20; ++k) {
    const fs::path dir = fresh("kill-" + std::to_string(k));
    const int delay = delay_ms(rng);
    INFO("kill " << k << " " << delay << " ms after the first epoch");
    Process p(dir, bpr_args(dir, "killed.json", 25));
    REQUIRE(p.wait_for("epoch 0 training"));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    p.signal(SIGKILL);
    p.wait();
    // Every checkpoint there is whole: a resume checkpoint reads, a best model loads.
    int resume_files = 0;
    if (fs::exists(dir / "saved"))
      for (const auto& e : fs::directory_iterator(dir / "saved")) {
        const std::string name = e.path().filename().string();
        if (e.path().extension() != ".pth") continue;  // a temporary file cut short
        if (name.find("-resume-") != std::string::npos) {
          ++resume_files;
          CHECK_NOTHROW(recbole::trainer::read_resume_header(e.path().string()));
        } else {
          torch::serialize::InputArchive in;
          CHECK_NOTHROW(
              recbole::trainer::load_checkpoint_archive(e.path().string(), "checkpoint", in));
        }
      }
    resumed_from_checkpoint += resume_files > 0;
    std::vector<std::string> args = bpr_args(dir, "after.json", 25);
    args.push_back("--resume=latest");
    Process again(dir, args);
    REQUIRE(again.wait() == 0);
    CHECK(result(dir / "after.json").at("test_result").size() == 5);
    // A write the kill cut short left a temporary file; the resumed run removed it.
    if (resume_files > 0)
      for (const auto& e : fs::directory_iterator(dir / "saved"))
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
    fs::remove_all(dir);
  }
  // Most kills land after the first epoch: the test is about those.
  CHECK(resumed_from_checkpoint >= 10);
}

TEST_CASE(
    "two processes: SIGTERM to the launcher or to one rank stops both, and resumed they end as the "
    "whole run",
    "[tool][signals][distributed]") {
  const fs::path dir = fresh("nproc");
  const int epochs = 12;
  Process whole(dir, bpr_args(dir, "whole.json", epochs, {"--nproc=2"}));
  REQUIRE(whole.wait() == 0);
  Process stopped(dir, bpr_args(dir, "stopped.json", epochs, {"--nproc=2"}));
  REQUIRE(stopped.wait_for("epoch 3 training"));
  stopped.signal(SIGTERM);
  REQUIRE(stopped.wait() == 143);
  CHECK(result(dir / "stopped.json").at("interrupted") == true);
  const std::string path = resume_from_log(stopped.output());

  // Another world size is refused; the same one continues.
  std::vector<std::string> one = bpr_args(dir, "one.json", epochs);
  one.push_back("--resume=" + path);
  Process single(dir, one);
  CHECK(single.wait() == 1);
  CHECK_THAT(single.output(), Catch::Contains("resume with the same number of processes"));

  // Resumed, and stopped again by a signal to rank 1 alone: both ranks stop together.
  std::vector<std::string> again = bpr_args(dir, "again.json", epochs, {"--nproc=2"});
  again.push_back("--resume=" + path);
  Process rank_stopped(dir, again);
  REQUIRE(rank_stopped.wait_for("epoch 6 training"));
  const std::vector<pid_t> ranks = rank_stopped.children();
  REQUIRE(ranks.size() == 2);
  ::kill(ranks[1], SIGTERM);
  REQUIRE(rank_stopped.wait() == 143);
  const std::string path2 = resume_from_log(rank_stopped.output());

  std::vector<std::string> args = bpr_args(dir, "resumed.json", epochs, {"--nproc=2"});
  args.push_back("--resume=" + path2);
  Process resumed(dir, args);
  REQUIRE(resumed.wait() == 0);
  CHECK(result(dir / "resumed.json").at("test_result") ==
        result(dir / "whole.json").at("test_result"));
}

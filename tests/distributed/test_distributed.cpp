// Distributed runs through the real recbole_run binary: several processes on this machine,
// Gloo on the CPU. Each case is one of the failures users reported with other frameworks.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist_test_util.h"

using namespace recbole::testing;

namespace {

namespace fs = std::filesystem;

// The small test dataset as dataset "test", written once per test process.
std::string small_dataset_path() {
  static const std::string dir = [] {
    const fs::path root =
        fs::temp_directory_path() / ("recbole_dist_data_" + std::to_string(getpid()));
    write_small_dataset((root / "test").string(), "test");
    return root.string();
  }();
  return dir;
}

std::vector<std::string> base_args(const std::string& workdir, const std::string& extra_result) {
  return {kRun,
          "--model=BPR",
          "--dataset=test",
          "--data_path=" + small_dataset_path(),
          "--show_progress=false",
          "--state=INFO",
          "--checkpoint_dir=" + workdir + "/saved",
          "--log_dir=" + workdir + "/log",
          "--result_file=" + workdir + "/" + extra_result};
}

std::string workdir(const std::string& name) { return fresh_dir("recbole_dist_" + name); }

nlohmann::json result(const std::string& path) { return nlohmann::json::parse(slurp(path)); }

// Two ranks started by hand with the given per-rank variables; both must succeed.
void two_ranks_train(const std::string& name,
                     const std::function<std::map<std::string, std::string>(int)>& env_of,
                     std::vector<std::string> extra = {}) {
  const std::string w = workdir(name);
  std::vector<Proc> procs;
  for (int r = 0; r < 2; ++r) {
    auto args = base_args(w, "result" + std::to_string(r) + ".json");
    args.push_back("--epochs=2");
    args.insert(args.end(), extra.begin(), extra.end());
    procs.push_back(start(args, env_of(r), w + "/rank" + std::to_string(r) + ".log"));
  }
  for (auto& p : procs) {
    INFO(slurp(p.log));
    REQUIRE(wait_for(p, 120) == 0);
  }
  INFO(slurp(procs[0].log));
  REQUIRE(slurp(procs[0].log).find("rank 0 of 2") != std::string::npos);
  REQUIRE(fs::exists(w + "/result0.json"));  // rank 0 writes the result
  REQUIRE_FALSE(fs::exists(w + "/result1.json"));
  fs::remove_all(w);
}

}  // namespace

TEST_CASE("recbole_run --nproc=2 trains with identical parameters on both ranks", "[dist]") {
  // BPR through the trainer's step; LightGCN through its own step without autograd, which
  // writes the gradients the ranks then average.
  for (const std::string model : {"BPR", "LightGCN"}) {
    DYNAMIC_SECTION(model) {
      const std::string w = workdir("nproc_" + model);
      auto args = base_args(w, "result.json");
      args[1] = "--model=" + model;
      args.push_back("--nproc=2");
      args.push_back("--epochs=3");
      Proc p = start(args, {}, w + "/run.log");
      const std::string log = w + "/run.log";
      const int rc = wait_for(p, 180);
      INFO(slurp(log));
      REQUIRE(rc == 0);
      // Every rank checks at the end that its parameters equal rank 0's, bit for bit.
      REQUIRE(slurp(log).find("parameters identical on all 2 ranks") != std::string::npos);
      auto j = result(w + "/result.json");
      REQUIRE(j["epochs_run"] == 3);
      REQUIRE(j["test_result"]["recall@10"].get<double>() > 0.0);
      fs::remove_all(w);
    }
  }
}

TEST_CASE("the same weights evaluate to identical metrics with 1 and 2 processes", "[dist]") {
  // epochs=0: no training, so both runs evaluate the same seeded initial weights. Full ranking
  // with GAUC and the item-level metrics, so that every ranking record field crosses the
  // gather; then the value metrics of uni100, whose records are the sampled candidates.
  auto same = [](const std::string& name, std::vector<std::string> extra, size_t n_metrics) {
    extra.insert(extra.begin(), "--epochs=0");
    extra.push_back("--eval_memory_budget_mb=1");
    const std::string w = workdir(name);
    auto one = base_args(w, "one.json");
    one.insert(one.end(), extra.begin(), extra.end());
    Proc p1 = start(one, {}, w + "/one.log");
    REQUIRE(wait_for(p1, 120) == 0);
    auto two = base_args(w, "two.json");
    two.insert(two.end(), extra.begin(), extra.end());
    two.push_back("--nproc=2");
    Proc p2 = start(two, {}, w + "/two.log");
    const int rc = wait_for(p2, 120);
    INFO(slurp(w + "/two.log"));
    REQUIRE(rc == 0);
    auto a = result(w + "/one.json"), b = result(w + "/two.json");
    REQUIRE(a["test_result"].size() == n_metrics);
    REQUIRE(a["test_result"] == b["test_result"]);
    fs::remove_all(w);
  };
  SECTION("ranking") {
    same("evalsame",
         {"--metrics=[Recall,MRR,NDCG,Hit,Precision,MAP,GAUC,ItemCoverage,GiniIndex]",
          "--topk=[5,10]"},
         17);  // 8 metrics x 2 cutoffs + GAUC
  }
  SECTION("value metrics of sampled candidates") {
    same("evalsame_uni",
         {"--eval_args={mode: uni100}", "--metrics=[AUC,LogLoss,GAUC]", "--valid_metric=AUC",
          // users holding every item have no negative to sample
          "--user_inter_num_interval=\"[0,150]\""},
         3);
  }
}

TEST_CASE("torchrun-style variables: two ranks train", "[dist]") {
  const int port = free_port();
  two_ranks_train("torchrun", [&](int r) {
    return std::map<std::string, std::string>{{"RANK", std::to_string(r)},
                                              {"WORLD_SIZE", "2"},
                                              {"LOCAL_RANK", std::to_string(r)},
                                              {"MASTER_ADDR", "127.0.0.1"},
                                              {"MASTER_PORT", std::to_string(port)}};
  });
}

TEST_CASE("OpenMPI-style variables: two ranks train", "[dist]") {
  const int port = free_port();
  two_ranks_train("openmpi",
                  [&](int r) {
                    return std::map<std::string, std::string>{
                        {"OMPI_COMM_WORLD_RANK", std::to_string(r)},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r)}};
                  },
                  {"--ip=127.0.0.1", "--port=" + std::to_string(port)});
}

TEST_CASE("Slurm-style variables: two ranks train", "[dist]") {
  const int port = free_port();
  two_ranks_train("slurm",
                  [&](int r) {
                    return std::map<std::string, std::string>{
                        {"SLURM_PROCID", std::to_string(r)},
                        {"SLURM_NTASKS", "2"},
                        {"SLURM_STEP_ID", "0"},  // srun's tasks
                        {"SLURM_LOCALID", std::to_string(r)}};
                  },
                  {"--ip=127.0.0.1", "--port=" + std::to_string(port)});
}

TEST_CASE("a rank pointed at a wrong port ends within dist_timeout with a clear message",
          "[dist]") {
  const std::string w = workdir("wrongport");
  const int port = free_port();  // nobody listens here
  auto args = base_args(w, "r.json");
  args.push_back("--dist_timeout=3");
  Proc p = start(args,
                 {{"RANK", "1"},
                  {"WORLD_SIZE", "2"},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", std::to_string(port)}},
                 w + "/rank1.log");
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = wait_for(p, 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string log = slurp(w + "/rank1.log");
  INFO(log);
  REQUIRE(rc != 0);
  REQUIRE(rc != -1);  // it ended by itself
  REQUIRE(took < 15);
  REQUIRE(log.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  REQUIRE(log.find("rank 1 of world size 2") != std::string::npos);
  REQUIRE(log.find("MASTER_PORT") != std::string::npos);
  fs::remove_all(w);
}

TEST_CASE("a peer killed mid-training ends the other rank within dist_timeout", "[dist]") {
  const std::string w = workdir("killed");
  const int port = free_port();
  std::vector<Proc> procs;
  for (int r = 0; r < 2; ++r) {
    auto args = base_args(w, "r" + std::to_string(r) + ".json");
    args.push_back("--epochs=100000");
    args.push_back("--dist_timeout=5");
    procs.push_back(start(args,
                          {{"RANK", std::to_string(r)},
                           {"WORLD_SIZE", "2"},
                           {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", std::to_string(port)}},
                          w + "/rank" + std::to_string(r) + ".log"));
  }
  // Wait until rank 0 is training, then kill rank 1.
  REQUIRE(log_shows(w + "/rank0.log", "epoch 1 training", 90));
  kill(procs[1].pid, SIGKILL);
  waitpid(procs[1].pid, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = wait_for(procs[0], 60);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string log = slurp(w + "/rank0.log");
  INFO(log);
  REQUIRE(rc != 0);
  REQUIRE(rc != -1);
  REQUIRE(took < 5 + 10);  // dist_timeout plus start-up slack
  REQUIRE(log.find("rank 0 of world size 2") != std::string::npos);
  fs::remove_all(w);
}

namespace {

// The pids of the processes whose parent is `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

TEST_CASE("recbole_run --nproc: a stopped rank cannot hang the launcher", "[dist]") {
  // Rank 0 fails within dist_timeout when its peer stops answering (SIGSTOP); the launcher then
  // asks the stopped rank to terminate, which it cannot while stopped: it must kill it.
  const std::string w = workdir("stopped");
  auto args = base_args(w, "r.json");
  args.push_back("--nproc=2");
  args.push_back("--epochs=100000");
  args.push_back("--dist_timeout=3");
  Proc launcher = start(args, {}, w + "/launcher.log");
  REQUIRE(log_shows(launcher.log, "epoch 1 training", 90));
  const std::vector<pid_t> ranks = children_of(launcher.pid);
  REQUIRE(ranks.size() == 2);
  kill(ranks[0], SIGSTOP);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = wait_for(launcher, 60);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (pid_t r : ranks) kill(r, SIGKILL);  // nothing left behind if the test fails
  INFO(slurp(launcher.log));
  REQUIRE(rc == 1);
  REQUIRE(took < 3 + 10 + 10);  // dist_timeout, the launcher's 10 s grace, slack
  fs::remove_all(w);
}

TEST_CASE("a rank-0 address that does not resolve fails at once, not after dist_timeout",
          "[dist]") {
  const std::string w = workdir("noname");
  auto args = base_args(w, "r.json");
  args.push_back("--dist_timeout=60");
  Proc p =
      start(args, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "no.such.host.invalid"}},
            w + "/run.log");
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = wait_for(p, 55);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(slurp(w + "/run.log"));
  REQUIRE(rc == 1);
  REQUIRE(took < 20);
  REQUIRE(slurp(w + "/run.log").find("cannot resolve the rank-0 address") != std::string::npos);
  fs::remove_all(w);
}

TEST_CASE("recbole_run --nproc with a world_size or offset that cannot hold its ranks is an error",
          "[dist]") {
  // world_size 1 < nproc 2; offset 1 + nproc 2 > world_size 2 (the default, nproc).
  const std::string w = workdir("nproc_world");
  for (const std::string extra : {"--world_size=1", "--offset=1"}) {
    auto args = base_args(w, "r.json");
    args.push_back("--nproc=2");
    args.push_back(extra);
    Proc p = start(args, {}, w + "/run.log");
    INFO(extra << ": " << slurp(w + "/run.log"));
    REQUIRE(wait_for(p, 60) == 1);
    const std::string log = slurp(w + "/run.log");
    const bool named = log.find("expected world_size >= nproc") != std::string::npos ||
                       log.find("expected offset <= 0") != std::string::npos;
    REQUIRE(named);
  }
  fs::remove_all(w);
}

namespace {

// Serves `dir` over HTTP on 127.0.0.1 with Python's http.server; its request log goes to `log`.
struct HttpServer {
  Proc proc;
  int port = 0;
  HttpServer(const std::string& dir, const std::string& log) {
    port = free_port();
    proc = start({"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                  std::to_string(port), "--directory", dir},
                 {}, log);
    // Wait until it answers.
    for (int i = 0; i < 100; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(port));
      const bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(fd);
      if (up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~HttpServer() {
    kill(proc.pid, SIGTERM);
    waitpid(proc.pid, nullptr, 0);
  }
};

// A zip of the small test dataset named `name`, written into `dir`.
void make_zip(const std::string& dir, const std::string& name) {
  fs::create_directories(dir + "/src");
  fs::copy_file(small_dataset_path() + "/test/test.inter", dir + "/src/" + name + ".inter",
                fs::copy_options::overwrite_existing);
  const std::string cmd = "cd " + dir + "/src && zip -q ../" + name + ".zip " + name + ".inter";
  REQUIRE(std::system(cmd.c_str()) == 0);
}

struct DownloadRun {
  int rc;
  std::string log;       // recbole_run's output
  std::string http_log;  // the server's request log
};

// Serves a zip of the small dataset as "mini" and runs one training epoch that must download it.
DownloadRun run_with_download(const std::string& w, std::vector<std::string> extra) {
  make_zip(w + "/www", "mini");
  HttpServer server(w + "/www", w + "/http.log");
  auto args = base_args(w, "r.json");
  args[2] = "--dataset=mini";
  args[3] = "--data_path=" + w + "/data";
  args.push_back("--epochs=1");
  args.push_back("--download_url=http://127.0.0.1:" + std::to_string(server.port) + "/mini.zip");
  args.insert(args.end(), extra.begin(), extra.end());
  Proc p = start(args, {}, w + "/run.log");
  const int rc = wait_for(p, 180);
  return {rc, slurp(w + "/run.log"), slurp(w + "/http.log")};
}

}  // namespace

TEST_CASE("a single-process run downloads its dataset and trains without any process group",
          "[dist]") {
  // Regression for RecBole's barrier() after a download in a one-process run.
  const std::string w = workdir("download1");
  DownloadRun r = run_with_download(w, {});
  INFO(r.log);
  REQUIRE(r.rc == 0);
  REQUIRE(fs::exists(w + "/data/mini/mini.inter"));
  REQUIRE(r.log.find("process group") == std::string::npos);
  REQUIRE(r.log.find("rank 0 of") == std::string::npos);  // never distributed
  REQUIRE(count(r.http_log, "GET /mini.zip") == 1);
  fs::remove_all(w);
}

TEST_CASE("two ranks: only one downloads, then both build the same dataset and train", "[dist]") {
  const std::string w = workdir("download2");
  DownloadRun r = run_with_download(w, {"--nproc=2"});
  INFO(r.log);
  REQUIRE(r.rc == 0);
  REQUIRE(count(r.http_log, "GET /mini.zip") == 1);
  // Both ranks finished training on identical data and weights.
  REQUIRE(r.log.find("parameters identical on all 2 ranks") != std::string::npos);
  fs::remove_all(w);
}

// Training across machines, on real (namespaced) hosts: each test makes a switch namespace with
// a bridge and two or three host namespaces joined to it by veth pairs (10.77.0.1, .2, .3/24),
// starts recbole_run inside them with `ip netns exec`, and removes every namespace (and every
// process left in one) whatever happens. It needs root or CAP_NET_ADMIN and iproute2's `ip`;
// without them each test says why and passes without running (Catch2 v2 has no SKIP).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist_test_util.h"

using namespace recbole::testing;

namespace {

namespace fs = std::filesystem;

const std::string kShared = std::string(RECBOLE_SHARED_DIR) + "/datasets";
constexpr int kStorePort = 29500;  // free in a fresh namespace

// Runs a shell command; returns its exit status and (in `out`) its output.
int sh(const std::string& cmd, std::string* out = nullptr) {
  const std::string file = fs::temp_directory_path() / ("rbmh_sh_" + std::to_string(getpid()));
  const int rc = std::system((cmd + " >" + file + " 2>&1").c_str());
  if (out) *out = slurp(file);
  fs::remove(file);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string ip_path() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

bool has_net_admin() {
  if (geteuid() == 0) return true;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> 12) & 1;  // CAP_NET_ADMIN = 12
  return false;
}

bool pid_alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// Namespaces named rbmh-<pid>-... whose test process is gone: left by a crashed run.
void remove_stale_namespaces(const std::string& ip) {
  std::string list;
  sh(ip + " netns list", &list);
  std::istringstream in(list);
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind("rbmh-", 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + 5));
    if (owner > 0 && owner != getpid() && pid_alive(owner)) continue;
    sh("for p in $(" + ip + " netns pids " + name + "); do kill -9 $p; done; " + ip +
       " netns del " + name);
  }
}

// A switch namespace with bridge br0, and `n` host namespaces each with eth0 = 10.77.0.(i+1)
// plugged into it. The destructor kills what runs inside and deletes them all.
class Hosts {
 public:
  explicit Hosts(int n) {
    static int counter = 0;
    ip_ = ip_path();
    if (ip_.empty()) {
      skip_ = "iproute2's `ip` is not installed (apt-get install iproute2)";
      return;
    }
    if (!has_net_admin()) {
      skip_ = "creating network namespaces needs root or CAP_NET_ADMIN";
      return;
    }
    remove_stale_namespaces(ip_);
    const std::string prefix = "rbmh-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    sw_ = prefix + "-sw";
    for (int i = 0; i < n; ++i) names_.push_back(prefix + "-h" + std::to_string(i));
    std::string out;
    if (sh(ip_ + " netns add " + sw_, &out) != 0) {
      skip_ = "cannot create a network namespace (" + out + ")";
      sw_.clear();
      return;
    }
    created_.push_back(sw_);
    run(ip_ + " -n " + sw_ + " link add br0 type bridge");
    run(ip_ + " -n " + sw_ + " link set br0 up");
    for (int i = 0; i < n; ++i) {
      const std::string& h = names_[i];
      run(ip_ + " netns add " + h);
      created_.push_back(h);
      const std::string port = "p" + std::to_string(i);
      run(ip_ + " -n " + sw_ + " link add " + port + " type veth peer name eth0 netns " + h);
      run(ip_ + " -n " + sw_ + " link set " + port + " master br0 up");
      run(ip_ + " -n " + h + " addr add " + address(i) + "/24 dev eth0");
      run(ip_ + " -n " + h + " link set eth0 up");
      run(ip_ + " -n " + h + " link set lo up");
    }
  }
  ~Hosts() {
    for (const auto& ns : created_) {
      sh("for p in $(" + ip_ + " netns pids " + ns + "); do kill -9 $p; done");
      sh(ip_ + " netns del " + ns);
    }
  }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;

  // Why the test cannot run here, or "" when it can.
  const std::string& skip_reason() const { return skip_; }
  static std::string address(int i) { return "10.77.0." + std::to_string(i + 1); }
  const std::string& ns(int i) const { return names_[i]; }
  const std::string& ip() const { return ip_; }
  // Takes host i's cable out: its port on the switch goes down.
  void unplug(int i) { run(ip_ + " -n " + sw_ + " link set p" + std::to_string(i) + " down"); }
  // The pids of the processes in host i.
  std::vector<pid_t> pids(int i) const {
    std::string out;
    sh(ip_ + " netns pids " + names_[i], &out);
    std::vector<pid_t> v;
    std::istringstream in(out);
    for (long p; in >> p;) v.push_back(static_cast<pid_t>(p));
    return v;
  }

 private:
  void run(const std::string& cmd) {
    std::string out;
    const int rc = sh(cmd, &out);
    INFO(cmd << ": " << out);
    REQUIRE(rc == 0);
  }
  std::string ip_, sw_, skip_;
  std::vector<std::string> names_, created_;
};

#define SKIP_WITHOUT_NAMESPACES(hosts)          \
  if (!(hosts).skip_reason().empty()) {         \
    WARN("skipped: " << (hosts).skip_reason()); \
    return;                                     \
  }

// Starts `args` in namespace `ns` ("" = this one) with extra environment; output goes to `log`.
Proc start(const std::string& ip, const std::string& ns, std::vector<std::string> args,
           const std::map<std::string, std::string>& env, const std::string& log) {
  if (!ns.empty()) args.insert(args.begin(), {ip, "netns", "exec", ns});
  return recbole::testing::start(std::move(args), env, log);
}

std::string host_workdir(const std::string& name) { return fresh_dir("recbole_mh_" + name); }

std::vector<std::string> bpr_args(const std::string& w, const std::string& result,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> a = {kRun,
                                "--model=BPR",
                                "--dataset=ml-100k",
                                "--data_path=" + kShared,
                                "--show_progress=false",
                                "--state=INFO",
                                "--seed=2020",
                                "--checkpoint_dir=" + w + "/saved",
                                "--log_dir=" + w + "/log",
                                "--result_file=" + w + "/" + result};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::map<std::string, std::string> torchrun_env(int rank, int world, const std::string& master) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", "0"},
          {"LOCAL_WORLD_SIZE", "1"},
          {"MASTER_ADDR", master},
          {"MASTER_PORT", std::to_string(kStorePort)}};
}

// test_result of a result file, each metric rounded to 4 decimals, as "name=value" lines.
std::string metrics_4(const std::string& path) {
  const auto j = nlohmann::json::parse(slurp(path));
  std::string s;
  for (const auto& [k, v] : j["test_result"].items()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
    s += k + "=" + buf + "\n";
  }
  return s;
}

// Runs the one-host reference (--nproc=`nproc` here, result local.json) and waits for it.
// The caller checks rc under its own INFO, so the log stays shown for the rest of the test.
Proc run_one_host(const Hosts& hosts, const std::string& w, const std::vector<std::string>& extra,
                  int nproc) {
  auto args = bpr_args(w, "local.json", extra);
  args.push_back("--nproc=" + std::to_string(nproc));
  Proc local = start(hosts.ip(), "", args, {}, w + "/local.log");
  wait_all({&local}, 120);
  return local;
}

// Requires multi0.json's metrics to equal local.json's (4 decimals); warns them, titled `what`.
void require_same_metrics(const std::string& w, const std::string& what) {
  const std::string a = metrics_4(w + "/local.json"), b = metrics_4(w + "/multi0.json");
  INFO("one host:\n" << a << "two hosts:\n" << b);
  REQUIRE(!a.empty());
  REQUIRE(a == b);
  WARN(what << " (4 decimals):\n" << b);
}

}  // namespace

TEST_CASE("two hosts with one rank each from torchrun variables equal one host with --nproc=2",
          "[multihost]") {
  Hosts hosts(2);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("torchrun");
  const std::vector<std::string> extra = {"--epochs=3"};
  Proc local = run_one_host(hosts, w, extra, 2);
  INFO(slurp(local.log));
  REQUIRE(local.rc == 0);
  std::vector<Proc> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(
        start(hosts.ip(), hosts.ns(r), bpr_args(w, "multi" + std::to_string(r) + ".json", extra),
              torchrun_env(r, 2, Hosts::address(0)), w + "/rank" + std::to_string(r) + ".log"));
  wait_all({&ranks[0], &ranks[1]}, 120);
  INFO(slurp(ranks[0].log) << "\n---- rank 1:\n" << slurp(ranks[1].log));
  REQUIRE(ranks[0].rc == 0);
  REQUIRE(ranks[1].rc == 0);
  // Each rank binds Gloo to its own host's address and says so.
  REQUIRE(slurp(ranks[1].log).find("(" + Hosts::address(1) + ")") != std::string::npos);
  REQUIRE(slurp(ranks[0].log).find("all 2 ranks agree") != std::string::npos);
  REQUIRE_FALSE(fs::exists(w + "/multi1.json"));  // global rank 0 alone writes the result
  require_same_metrics(w, "torchrun, 2 hosts x 1 rank vs --nproc=2");
  fs::remove_all(w);
}

TEST_CASE("two hosts with --nproc=2 --world_size=4 --offset=0 or 2 equal one host with --nproc=4",
          "[multihost]") {
  Hosts hosts(2);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("offset");
  const std::vector<std::string> extra = {"--epochs=2"};
  Proc local = run_one_host(hosts, w, extra, 4);
  INFO(slurp(local.log));
  REQUIRE(local.rc == 0);
  std::vector<Proc> launchers;
  for (int h = 0; h < 2; ++h) {
    auto args = bpr_args(w, "multi" + std::to_string(h) + ".json", extra);
    for (const std::string& s : std::vector<std::string>{
             "--nproc=2", "--world_size=4", "--offset=" + std::to_string(2 * h),
             "--ip=" + Hosts::address(0), "--port=" + std::to_string(kStorePort)})
      args.push_back(s);
    launchers.push_back(
        start(hosts.ip(), hosts.ns(h), args, {}, w + "/host" + std::to_string(h) + ".log"));
  }
  wait_all({&launchers[0], &launchers[1]}, 150);
  INFO(slurp(launchers[0].log) << "\n---- host 1:\n" << slurp(launchers[1].log));
  REQUIRE(launchers[0].rc == 0);
  REQUIRE(launchers[1].rc == 0);
  const std::string h1 = slurp(launchers[1].log);
  REQUIRE(h1.find("rank 2 of 4") != std::string::npos);
  REQUIRE(h1.find("rank 3 of 4") != std::string::npos);
  REQUIRE(slurp(launchers[0].log).find("parameters identical on all 4 ranks") != std::string::npos);
  REQUIRE_FALSE(fs::exists(w + "/multi1.json"));
  require_same_metrics(w, "--nproc=2 --world_size=4 on 2 hosts vs --nproc=4");
  fs::remove_all(w);
}

TEST_CASE(
    "each host downloads once into its own data_path and a host whose copy differs is refused",
    "[multihost]") {
  Hosts hosts(2);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("download");
  write_small_dataset(w + "/www/src", "mini");
  REQUIRE(sh("cd " + w + "/www/src && zip -q ../mini.zip mini.inter") == 0);
  // The dataset is served from host 0 only.
  const int http_port = 8080;
  Proc server = start(hosts.ip(), hosts.ns(0),
                      {"/usr/bin/python3", "-u", "-m", "http.server", "--bind", Hosts::address(0),
                       std::to_string(http_port), "--directory", w + "/www"},
                      {}, w + "/http.log");
  struct Stop {
    Proc& p;
    ~Stop() {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, nullptr, 0);
    }
  } stop{server};
  REQUIRE(log_shows(w + "/http.log", "Serving HTTP", 20));
  auto launch = [&](int h, const std::string& tag) {
    std::vector<std::string> args = {kRun,
                                     "--model=BPR",
                                     "--dataset=mini",
                                     "--data_path=" + w + "/host" + std::to_string(h),
                                     "--epochs=1",
                                     "--show_progress=false",
                                     "--state=INFO",
                                     "--checkpoint_dir=" + w + "/saved",
                                     "--log_dir=" + w + "/log",
                                     "--result_file=" + w + "/" + tag + std::to_string(h) + ".json",
                                     "--download_url=http://" + Hosts::address(0) + ":" +
                                         std::to_string(http_port) + "/mini.zip",
                                     "--nproc=2",
                                     "--world_size=4",
                                     "--offset=" + std::to_string(2 * h),
                                     "--ip=" + Hosts::address(0),
                                     "--port=" + std::to_string(kStorePort),
                                     "--dist_timeout=20"};
    // Host 1 names its interface as PyTorch users do; host 0 finds it from the route.
    std::map<std::string, std::string> env;
    if (h == 1) env["GLOO_SOCKET_IFNAME"] = "eth0";
    return start(hosts.ip(), hosts.ns(h), args, env, w + "/" + tag + std::to_string(h) + ".log");
  };
  std::vector<Proc> first = {launch(0, "first"), launch(1, "first")};
  wait_all({&first[0], &first[1]}, 120);
  INFO(slurp(first[0].log) << "\n---- host 1:\n"
                           << slurp(first[1].log) << "\n---- http:\n"
                           << slurp(w + "/http.log"));
  REQUIRE(first[0].rc == 0);
  REQUIRE(first[1].rc == 0);
  // One download per host (its first local rank), not one per rank or one per world.
  REQUIRE(count(slurp(w + "/http.log"), "GET /mini.zip") == 2);
  REQUIRE(fs::exists(w + "/host0/mini/mini.inter"));
  REQUIRE(fs::exists(w + "/host1/mini/mini.inter"));
  REQUIRE(slurp(first[1].log).find("(Gloo bound to interface eth0)") != std::string::npos);
  REQUIRE(slurp(first[0].log).find("(Gloo bound to the route to " + Hosts::address(0) + ")") !=
          std::string::npos);

  // Host 1's copy: one line edited (an item id changed).
  const std::string path = w + "/host1/mini/mini.inter";
  std::string text = slurp(path);
  const size_t line5 = [&] {
    size_t p = 0;
    for (int i = 0; i < 5; ++i) p = text.find('\n', p) + 1;
    return p;
  }();
  const size_t tab = text.find('\t', line5);
  text.insert(tab + 1, "9");  // item "X" becomes "9X": another item
  std::ofstream(path) << text;
  std::vector<Proc> second = {launch(0, "second"), launch(1, "second")};
  wait_all({&second[0], &second[1]}, 60);
  const std::string log0 = slurp(second[0].log), log1 = slurp(second[1].log);
  INFO(log0 << "\n---- host 1:\n" << log1);
  REQUIRE(second[0].rc == 1);
  REQUIRE(second[1].rc == 1);
  for (const std::string& log : {log0, log1}) {
    REQUIRE(log.find("the dataset split differs") != std::string::npos);
    REQUIRE(log.find("rank 2 on host") != std::string::npos);
    REQUIRE(log.find("(" + Hosts::address(1) + ")") != std::string::npos);
  }
  REQUIRE(count(slurp(w + "/http.log"), "GET /mini.zip") == 2);  // nothing downloaded again
  WARN("differing copy refused: " << log0.substr(log0.find("ranks disagree"), 300));
  fs::remove_all(w);
}

namespace {

// Three hosts, one rank each, training ml-100k until stopped; returns the ranks once rank 0
// trains its second epoch.
std::vector<Proc> three_training_ranks(const Hosts& hosts, const std::string& w, double timeout) {
  std::vector<Proc> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(
        start(hosts.ip(), hosts.ns(r),
              bpr_args(w, "r" + std::to_string(r) + ".json",
                       {"--epochs=100000", "--dist_timeout=" + std::to_string(timeout)}),
              torchrun_env(r, 3, Hosts::address(0)), w + "/rank" + std::to_string(r) + ".log"));
  return ranks;
}

}  // namespace

TEST_CASE("a host killed mid-epoch: the other hosts' ranks exit within dist_timeout naming it",
          "[multihost]") {
  Hosts hosts(3);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("killed");
  constexpr double kTimeout = 5;
  std::vector<Proc> ranks = three_training_ranks(hosts, w, kTimeout);
  const bool training = log_shows(w + "/rank0.log", "epoch 1 training", 90);
  INFO(slurp(ranks[0].log));
  REQUIRE(training);
  for (pid_t p : hosts.pids(2)) kill(p, SIGKILL);  // the whole host: every process on it
  const auto t0 = Clock::now();
  wait_all({&ranks[0], &ranks[1], &ranks[2]}, 60, t0);
  for (int r = 0; r < 2; ++r) {
    const std::string log = slurp(ranks[r].log);
    INFO("rank " << r << " exit " << ranks[r].rc << " after " << ranks[r].took << " s:\n" << log);
    REQUIRE(ranks[r].rc == 1);
    REQUIRE(ranks[r].took < kTimeout + 10);
    REQUIRE(log.find("rank 2 on host") != std::string::npos);
    REQUIRE(log.find("(" + Hosts::address(2) + ")") != std::string::npos);
    REQUIRE(log.find(":" + std::to_string(kStorePort)) != std::string::npos);
    WARN("SIGKILL of host 2: rank " << r << " exited after " << ranks[r].took
                                    << " s: " << log.substr(log.find("recbole_run: error"), 600));
  }
  for (int h = 0; h < 3; ++h) REQUIRE(hosts.pids(h).empty());  // nothing left behind
  fs::remove_all(w);
}

TEST_CASE("a host cut off mid-epoch: every rank exits within dist_timeout naming the lost host",
          "[multihost]") {
  Hosts hosts(3);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("unplugged");
  constexpr double kTimeout = 5;
  std::vector<Proc> ranks = three_training_ranks(hosts, w, kTimeout);
  const bool training = log_shows(w + "/rank0.log", "epoch 1 training", 90);
  INFO(slurp(ranks[0].log));
  REQUIRE(training);
  hosts.unplug(2);
  const auto t0 = Clock::now();
  wait_all({&ranks[0], &ranks[1], &ranks[2]}, 60, t0);
  for (int r = 0; r < 3; ++r) {
    const std::string log = slurp(ranks[r].log);
    INFO("rank " << r << " exit " << ranks[r].rc << " after " << ranks[r].took << " s:\n" << log);
    REQUIRE(ranks[r].rc == 1);
    REQUIRE(ranks[r].took < kTimeout + 10);
    // The survivors name the host they lost; the cut-off host names the ones it cannot reach.
    const std::string lost = r < 2 ? Hosts::address(2) : Hosts::address(0);
    REQUIRE(log.find("(" + lost + "): unreachable") != std::string::npos);
    WARN("link of host 2 down: rank " << r << " exited after " << ranks[r].took
                                      << " s: " << log.substr(log.find("recbole_run: error"), 600));
  }
  for (int h = 0; h < 3; ++h) REQUIRE(hosts.pids(h).empty());
  fs::remove_all(w);
}

TEST_CASE("an unreachable rank-0 host and a different world size end within dist_timeout",
          "[multihost]") {
  Hosts hosts(2);
  SKIP_WITHOUT_NAMESPACES(hosts);
  const std::string w = host_workdir("unreachable");
  constexpr double kTimeout = 4;
  const std::vector<std::string> extra = {"--epochs=1", "--dist_timeout=4"};
  {
    // Rank 0's host is up but cut off: rank 1 cannot reach the store.
    hosts.unplug(0);
    Proc r1 = start(hosts.ip(), hosts.ns(1), bpr_args(w, "u1.json", extra),
                    torchrun_env(1, 2, Hosts::address(0)), w + "/unreachable.log");
    wait_all({&r1}, 60);
    const std::string log = slurp(r1.log);
    INFO("exit " << r1.rc << " after " << r1.took << " s:\n" << log);
    REQUIRE(r1.rc == 1);
    REQUIRE(r1.took < kTimeout + 10);
    REQUIRE(log.find(Hosts::address(0) + ":" + std::to_string(kStorePort)) != std::string::npos);
    REQUIRE(log.find("(" + Hosts::address(1) + ")") != std::string::npos);  // its own host
    WARN("unreachable rank-0 host: rank 1 exited after " << r1.took << " s");
  }
  Hosts fresh(2);
  Proc r0 = start(fresh.ip(), fresh.ns(0), bpr_args(w, "m0.json", extra),
                  torchrun_env(0, 2, Hosts::address(0)), w + "/mismatch0.log");
  Proc r1 = start(fresh.ip(), fresh.ns(1), bpr_args(w, "m1.json", extra),
                  torchrun_env(1, 3, Hosts::address(0)), w + "/mismatch1.log");
  wait_all({&r0, &r1}, 60);
  INFO(slurp(r0.log) << "\n---- rank 1:\n" << slurp(r1.log));
  REQUIRE(r0.rc == 1);
  REQUIRE(r1.rc == 1);
  REQUIRE(r0.took < kTimeout + 10);
  REQUIRE(r1.took < kTimeout + 10);
  const std::string both = slurp(r0.log) + slurp(r1.log);
  REQUIRE(both.find("world size mismatch") != std::string::npos);
  WARN("world size 2 vs 3: ranks exited after " << r0.took << " s and " << r1.took << " s");
  fs::remove_all(w);
}

TEST_CASE("a Gloo interface without an address is an error naming it", "[multihost]") {
  // No namespace needed: the interface is checked before any connection is tried.
  const std::string w = host_workdir("ifname");
  Proc p = start("", "", bpr_args(w, "r.json", {"--epochs=1", "--socket_ifname=nosuch0"}),
                 torchrun_env(1, 2, "127.0.0.1"), w + "/run.log");
  wait_all({&p}, 60);
  const std::string log = slurp(p.log);
  INFO(log);
  REQUIRE(p.rc == 1);
  REQUIRE(p.took < 10);
  REQUIRE(log.find("network interface \"nosuch0\"") != std::string::npos);
  REQUIRE(log.find("socket_ifname or GLOO_SOCKET_IFNAME") != std::string::npos);
  fs::remove_all(w);
}

TEST_CASE("ranks started with different options are refused on every rank naming the key",
          "[dist]") {
  // On one machine (no namespace): rank 1 trains with another learning rate; per-machine keys
  // (here result_file and data_path spelled differently) may differ.
  const std::string w = host_workdir("options");
  const int port = free_port();
  auto env = [&](int r) {
    auto e = torchrun_env(r, 2, "127.0.0.1");
    e["MASTER_PORT"] = std::to_string(port);
    return e;
  };
  Proc r0 = start("", "", bpr_args(w, "r0.json", {"--epochs=1", "--dist_timeout=30"}), env(0),
                  w + "/r0.log");
  auto args1 = bpr_args(w, "r1.json", {"--epochs=1", "--dist_timeout=30", "--learning_rate=0.01"});
  args1[3] = "--data_path=" + kShared + "/";
  Proc r1 = start("", "", args1, env(1), w + "/r1.log");
  wait_all({&r0, &r1}, 60);
  for (Proc* p : {&r0, &r1}) {
    const std::string log = slurp(p->log);
    INFO(log);
    REQUIRE(p->rc == 1);
    REQUIRE(log.find("the effective configuration differs from rank 0's") != std::string::npos);
    REQUIRE(log.find("learning_rate: rank 0 has 0.001, rank 1 has 0.01") != std::string::npos);
    const size_t error = log.find("ranks disagree");
    REQUIRE(error != std::string::npos);
    REQUIRE(log.find("data_path", error) == std::string::npos);  // a per-machine key
  }
  fs::remove_all(w);
}

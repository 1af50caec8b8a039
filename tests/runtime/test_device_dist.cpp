// DeviceManager and Dist at world size 1: the field failures users reported elsewhere.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "recbole/config/config.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/runtime/dist.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "tests/scoped_env.h"
#include "tests/source_lint.h"

using recbole::DeviceManager;
using recbole::DeviceSettings;
using recbole::Dist;
using recbole::DistSettings;

using recbole::testing::ScopedEnv;

namespace {
DeviceSettings cpu_settings() {
  DeviceSettings s;
  s.device = "cpu";
  return s;
}
}  // namespace

TEST_CASE("a tensor on another device is a clear error naming model and tensor", "[device]") {
  DeviceManager dm(cpu_settings());
  REQUIRE(dm.device().is_cpu());
  dm.check(torch::zeros({2, 3}), "BPR", "scores");  // fine
  // A meta tensor stands in for "a device other than the manager's" on a CPU-only machine.
  torch::Tensor elsewhere = torch::empty({2, 3}, torch::TensorOptions().device(torch::kMeta));
  try {
    dm.check(elsewhere, "EASE", "full_sort_predict scores");
    FAIL("expected DeviceError");
  } catch (const recbole::DeviceError& e) {
    const std::string msg = e.what();
    REQUIRE(msg.find("EASE") != std::string::npos);
    REQUIRE(msg.find("full_sort_predict scores") != std::string::npos);
    REQUIRE(msg.find("meta") != std::string::npos);
    REQUIRE(msg.find("cpu") != std::string::npos);
  }
  REQUIRE_THROWS_AS(dm.check(torch::Tensor(), "BPR", "loss"), recbole::DeviceError);
}

TEST_CASE("CUDA asked for without a GPU: warning and CPU, or an error when strict", "[device]") {
  if (DeviceManager::cuda_available()) return;  // this case is about machines without CUDA
  DeviceSettings s;
  s.device = "cuda";
  REQUIRE(DeviceManager(s).device().is_cpu());
  s.strict = true;
  REQUIRE_THROWS_AS(DeviceManager(s), recbole::DeviceError);
  s.device = "gpu0";
  REQUIRE_THROWS_AS(DeviceManager(s), recbole::ConfigError);
}

TEST_CASE("seeding repeats the same random stream", "[device]") {
  DeviceManager dm(cpu_settings());
  dm.seed(123);
  torch::Tensor a = torch::rand({5});
  dm.seed(123);
  REQUIRE(torch::equal(a, torch::rand({5})));
}

TEST_CASE("world size 1: every collective is a no-op and no process group exists", "[dist]") {
  // Regression for "Default process group has not been initialized": a single process must be
  // able to call barrier() and friends (e.g. after a download) without any c10d state.
  Dist dist(DistSettings{});
  REQUIRE_FALSE(dist.active());
  REQUIRE(dist.is_main());
  dist.barrier("after download");
  torch::Tensor t = torch::ones({3});
  dist.all_reduce_sum(t);
  dist.broadcast(t, 0);
  REQUIRE(torch::equal(t, torch::ones({3})));
  REQUIRE(torch::equal(dist.all_gather_cat(t), t));
}

TEST_CASE("a rank that cannot reach the store fails within the timeout, naming the address",
          "[dist]") {
  DistSettings s;
  s.rank = 1;  // a client: nobody hosts the store on this port
  s.world_size = 2;
  s.master_addr = "127.0.0.1";
  s.master_port = 1;  // nothing listens on port 1
  s.timeout_s = 2;
  s.launcher = "torchrun";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Dist dist(s);
    FAIL("expected DistError");
  } catch (const recbole::DistError& e) {
    const std::string msg = e.what();
    REQUIRE(msg.find("127.0.0.1:1") != std::string::npos);
    REQUIRE(msg.find("rank 1 of world size 2") != std::string::npos);
    REQUIRE(msg.find("MASTER_PORT") != std::string::npos);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(took < 10.0);
}

TEST_CASE("only the device manager moves tensors between devices", "[device]") {
  // The invariant behind "scores on the CPU while the model is on the GPU": models, the trainer
  // and the run API create tensors with the manager's options and move them only through
  // DeviceManager::place / to_host. A direct .to(device)/.cuda()/.cpu() elsewhere fails here.
  const std::string offenders = recbole::testing::lines_containing(
      {"models", "trainer", "recbole"},
      {".to(torch::kCPU", ".to(torch::kCUDA", ".cuda()", ".cpu()", ".to(device"},
      {"device_manager"});
  INFO("direct device moves at: " << offenders);
  REQUIRE(offenders.empty());
}

namespace {

recbole::config::Config plain_config() {
  recbole::config::ConfigSources s;
  s.model = "BPR";
  s.dataset = "ml-100k";
  return recbole::config::Config::build(s);
}

}  // namespace

TEST_CASE("processes on one machine share its cores: num_threads 0 divides them",
          "[device][threads]") {
  const int cores = recbole::resolve_num_threads(0);
  DeviceSettings s = cpu_settings();
  s.num_threads = 0;
  s.local_world_size = 2;
  REQUIRE(DeviceManager(s).cpu_threads() == std::max(1, cores / 2));
  s.local_world_size = 1;
  REQUIRE(DeviceManager(s).cpu_threads() == cores);
  s.num_threads = 3;  // an explicit count wins
  s.local_world_size = 4;
  REQUIRE(DeviceManager(s).cpu_threads() == 3);
  REQUIRE(recbole::ThreadPool::instance().threads() == 3);
}

TEST_CASE("the local process count comes from the launcher", "[dist][threads]") {
  const auto config = plain_config();
  {
    ScopedEnv rank("RANK", "1"), world("WORLD_SIZE", "4"), local("LOCAL_RANK", "1"),
        local_world("LOCAL_WORLD_SIZE", "2");
    const DistSettings d = recbole::detect_dist_settings(config);
    REQUIRE(d.launcher == "torchrun");
    REQUIRE(d.local_world_size == 2);
  }
  {
    ScopedEnv rank("OMPI_COMM_WORLD_RANK", "0"), world("OMPI_COMM_WORLD_SIZE", "3"),
        local("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
    REQUIRE(recbole::detect_dist_settings(config).local_world_size == 3);
  }
  {
    ScopedEnv rank("SLURM_PROCID", "0"), world("SLURM_NTASKS", "6"),
        per_node("SLURM_NTASKS_PER_NODE", "2(x3)"), step("SLURM_STEP_ID", "0");
    REQUIRE(recbole::detect_dist_settings(config).local_world_size == 2);
  }
  {
    // A batch script's environment (sbatch --ntasks=6, no srun): no step id, so not a launch.
    // Taken for one, a plain run in the script would wait dist_timeout for 5 absent ranks.
    ScopedEnv rank("SLURM_PROCID", "0"), world("SLURM_NTASKS", "6");
    const DistSettings d = recbole::detect_dist_settings(config);
    REQUIRE(d.world_size == 1);
    REQUIRE(d.launcher == "none");
  }
  REQUIRE(recbole::detect_dist_settings(config).local_world_size == 1);  // no launcher
}

TEST_CASE("launcher ports outside 1..65535 are errors, not wrapped around", "[dist]") {
  const auto config = plain_config();
  for (const char* bad : {"70000", "0", "-5", "12ab"}) {
    INFO(bad);
    ScopedEnv rank("RANK", "1"), world("WORLD_SIZE", "2"), port("MASTER_PORT", bad);
    REQUIRE_THROWS_AS(recbole::detect_dist_settings(config), recbole::DistError);
    REQUIRE_THROWS_WITH(recbole::detect_dist_settings(config), Catch::Contains("MASTER_PORT"));
  }
}

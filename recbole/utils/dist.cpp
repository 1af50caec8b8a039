#include "recbole/utils/dist.h"

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int env_int(const char* name, const char* launcher) {
  const char* v = env(name);
  try {
    size_t used = 0;
    const int i = std::stoi(v, &used);
    if (v[used] == '\0') return i;
  } catch (const std::exception&) {
  }
  throw DistError(std::string(launcher) + " variable " + name + ": expected an integer, got \"" +
                  v + "\"");
}

int env_port(const char* name, const char* launcher) {
  const int port = env_int(name, launcher);
  if (port < 1 || port > 65535)
    throw DistError(std::string(launcher) + " variable " + name +
                    ": expected a port in 1..65535, got " + std::to_string(port));
  return port;
}

// A libtorch exception's message without the C++ stack frames it carries.
std::string short_message(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string m = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  const size_t frames = m.find("\nException raised from");
  if (frames != std::string::npos) m.resize(frames);
  return m.substr(0, 400);
}

}  // namespace

DistSettings detect_dist_settings(const config::Config& config) {
  DistSettings s;
  s.timeout_s = config.get_double("dist_timeout");
  s.backend = config.get_string("dist_backend");
  s.master_addr = config.get_string("ip");
  if (s.master_addr == "localhost") s.master_addr = "127.0.0.1";
  s.master_port = static_cast<int>(config.get_int("port"));
  if (env("RECBOLE_RANK") && env("RECBOLE_WORLD_SIZE")) {
    // Started by recbole_run --nproc: rank 0 hosts the store.
    s.launcher = "recbole";
    s.rank = env_int("RECBOLE_RANK", "recbole_run");
    s.world_size = env_int("RECBOLE_WORLD_SIZE", "recbole_run");
    s.local_rank = env("RECBOLE_LOCAL_RANK") ? env_int("RECBOLE_LOCAL_RANK", "recbole_run") : s.rank;
    if (env("RECBOLE_MASTER_PORT")) s.master_port = env_port("RECBOLE_MASTER_PORT", "recbole_run");
    s.local_world_size = s.world_size;  // --nproc starts every process on this machine
  } else if (env("RANK") && env("WORLD_SIZE")) {
    s.launcher = "torchrun";
    s.rank = env_int("RANK", "torchrun");
    s.world_size = env_int("WORLD_SIZE", "torchrun");
    s.local_rank = env("LOCAL_RANK") ? env_int("LOCAL_RANK", "torchrun") : 0;
    s.local_world_size =
        env("LOCAL_WORLD_SIZE") ? env_int("LOCAL_WORLD_SIZE", "torchrun") : s.world_size;
    if (env("MASTER_ADDR")) s.master_addr = env("MASTER_ADDR");
    if (env("MASTER_PORT")) s.master_port = env_port("MASTER_PORT", "torchrun");
    // torchrun's elastic agent hosts the store itself and tells the workers so.
    s.store_hosted_by_launcher = env("TORCHELASTIC_USE_AGENT_STORE") &&
                                 std::string(env("TORCHELASTIC_USE_AGENT_STORE")) == "True";
  } else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    s.launcher = "openmpi";
    s.rank = env_int("OMPI_COMM_WORLD_RANK", "OpenMPI");
    s.world_size = env_int("OMPI_COMM_WORLD_SIZE", "OpenMPI");
    s.local_rank = env("OMPI_COMM_WORLD_LOCAL_RANK")
                       ? env_int("OMPI_COMM_WORLD_LOCAL_RANK", "OpenMPI") : 0;
    s.local_world_size = env("OMPI_COMM_WORLD_LOCAL_SIZE")
                             ? env_int("OMPI_COMM_WORLD_LOCAL_SIZE", "OpenMPI") : s.world_size;
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS") &&
             (env("SLURM_STEP_ID") || env("SLURM_STEPID"))) {
    s.launcher = "slurm";
    s.rank = env_int("SLURM_PROCID", "Slurm");
    s.world_size = env_int("SLURM_NTASKS", "Slurm");
    s.local_rank = env("SLURM_LOCALID") ? env_int("SLURM_LOCALID", "Slurm") : 0;
    // SLURM_NTASKS_PER_NODE may read "2(x3)"; its leading number is the tasks on this node.
    const char* per_node = env("SLURM_NTASKS_PER_NODE");
    s.local_world_size = per_node && std::atoi(per_node) > 0 ? std::atoi(per_node) : s.world_size;
  } else {
    if (env("SLURM_PROCID") && env("SLURM_NTASKS"))
      // A batch script's own environment (sbatch --ntasks=N) has SLURM_PROCID and SLURM_NTASKS,
      // but only srun starts the N tasks, and only srun's tasks have a step id. Taken for a
      // launch, a plain `recbole_run` in the script would wait dist_timeout for ranks that
      // never come.
      log::warning("Slurm variables without a job step (SLURM_NTASKS " +
                   std::string(env("SLURM_NTASKS")) +
                   ", no SLURM_STEP_ID): not started by srun, so not a distributed launch; start "
                   "the ranks with srun to train on several processes");
    const int64_t world = config.get_int("world_size");
    if (world > 1) {
      s.launcher = "config";
      s.world_size = static_cast<int>(world);
      s.local_rank = config.has("local_rank") && !config.is_null("local_rank")
                         ? static_cast<int>(config.get_int("local_rank")) : 0;
      s.rank = s.local_rank + static_cast<int>(config.get_int("offset"));
      s.local_world_size = s.world_size;  // unknown: assume every process shares this machine
    }
  }
  if (s.world_size < 1 || s.rank < 0 || s.rank >= s.world_size)
    throw DistError("launcher " + s.launcher + " gave rank " + std::to_string(s.rank) +
                    " and world size " + std::to_string(s.world_size) +
                    ": expected 0 <= rank < world size");
  return s;
}

struct Dist::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

std::string where(const DistSettings& s) {
  return "store " + s.master_addr + ":" + std::to_string(s.master_port) + ", rank " +
         std::to_string(s.rank) + " of world size " + std::to_string(s.world_size) +
         " (launcher " + s.launcher + ", dist_timeout " + seconds_text(s.timeout_s) + ")";
}

}  // namespace

Dist::Dist(const DistSettings& settings, bool cuda) : settings_(settings) {
  if (settings_.world_size <= 1) return;  // single process: never touch c10d
  if (cuda || settings_.backend == "nccl")
    throw DistError("the NCCL backend is not available in this build of recbole-cpp (libtorch " +
                    std::string(TORCH_VERSION) + "); use dist_backend: gloo and device: cpu");
  impl_ = std::make_unique<Impl>();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(settings_.timeout_s * 1000));
  // Said before waiting: a rank whose peers never come waits dist_timeout (30 min by default).
  log::info("joining the process group: " + where(settings_));
  // A name that does not resolve would otherwise cost the whole dist_timeout in retries.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = ::getaddrinfo(settings_.master_addr.c_str(), nullptr, &hints, &found);
  if (gai == EAI_NONAME)  // not a transient failure (EAI_AGAIN): c10d's retries may still win
    throw DistError("cannot resolve the rank-0 address \"" + settings_.master_addr + "\" (" +
                    ::gai_strerror(gai) + "): set ip (or MASTER_ADDR) to a reachable host name "
                    "or address; " + where(settings_));
  if (found != nullptr) ::freeaddrinfo(found);
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(settings_.master_port);
    opts.isServer = settings_.rank == 0 && !settings_.store_hosted_by_launcher;
    opts.numWorkers = settings_.world_size;
    opts.waitWorkers = false;
    opts.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(settings_.master_addr, opts);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(settings_.master_addr));
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, settings_.rank,
                                                              settings_.world_size, options);
  } catch (const std::exception& e) {
    throw DistError("cannot join the process group at " + where(settings_) + ": " +
                    short_message(e) +
                    "\nCheck that every rank uses the same address and port (ip/port, "
                    "MASTER_ADDR/MASTER_PORT), that rank 0 is running and the port is free and "
                    "reachable, and that WORLD_SIZE matches the number of processes started.");
  }
}

Dist::~Dist() = default;

namespace {

template <typename F>
void run_collective(const DistSettings& s, const std::string& what, F&& f) {
  try {
    auto work = f();
    work->wait();
  } catch (const std::exception& e) {
    throw DistError(what + " failed at " + where(s) + ": " + short_message(e) +
                    "\nA peer process probably died or stopped responding; see its log.");
  }
}

}  // namespace

void Dist::barrier(const std::string& what) {
  if (!active()) return;
  // A barrier is an all-reduce of one element: Gloo's barrier ignores the timeout on some paths.
  torch::Tensor t = torch::zeros({1});
  run_collective(settings_, "barrier (" + what + ")", [&] {
    std::vector<torch::Tensor> v{t};
    return impl_->gloo->allreduce(v);
  });
}

void Dist::all_reduce_sum(torch::Tensor& t) {
  if (!active()) return;
  run_collective(settings_, "all-reduce", [&] {
    std::vector<torch::Tensor> v{t};
    return impl_->gloo->allreduce(v);
  });
}

void Dist::broadcast(torch::Tensor& t, int root) {
  if (!active()) return;
  run_collective(settings_, "broadcast", [&] {
    std::vector<torch::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    return impl_->gloo->broadcast(v, o);
  });
}

torch::Tensor Dist::all_gather_cat(const torch::Tensor& t) {
  if (!active()) return t;
  // Lengths first, then every rank's data padded to the longest.
  torch::Tensor len = torch::tensor({t.numel()}, torch::kInt64);
  std::vector<torch::Tensor> lens(settings_.world_size);
  for (auto& l : lens) l = torch::zeros({1}, torch::kInt64);
  run_collective(settings_, "all-gather", [&] {
    std::vector<std::vector<torch::Tensor>> out{lens};
    std::vector<torch::Tensor> in{len};
    auto w = impl_->gloo->allgather(out, in);
    w->wait();
    lens = out[0];
    return w;
  });
  int64_t max_len = 0;
  for (auto& l : lens) max_len = std::max(max_len, l.item<int64_t>());
  // Every rank sees the same lengths, so all skip together; Gloo cannot gather empty tensors.
  if (max_len == 0) return torch::empty({0}, t.options());
  torch::Tensor padded = torch::zeros({max_len}, t.options());
  if (t.numel() > 0) padded.narrow(0, 0, t.numel()).copy_(t.reshape({-1}));
  std::vector<torch::Tensor> parts(settings_.world_size);
  for (auto& p : parts) p = torch::zeros({max_len}, t.options());
  run_collective(settings_, "all-gather", [&] {
    std::vector<std::vector<torch::Tensor>> out{parts};
    std::vector<torch::Tensor> in{padded};
    auto w = impl_->gloo->allgather(out, in);
    w->wait();
    parts = out[0];
    return w;
  });
  std::vector<torch::Tensor> trimmed;
  for (int r = 0; r < settings_.world_size; ++r)
    trimmed.push_back(parts[r].narrow(0, 0, lens[r].item<int64_t>()));
  return torch::cat(trimmed);
}

}  // namespace recbole

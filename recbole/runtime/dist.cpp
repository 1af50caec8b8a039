#include "recbole/runtime/dist.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <torch/torch.h>
// PyTorch's pip wheels ship libtorch without Gloo's headers (CMakeLists.txt then defines
// RECBOLE_WITHOUT_GLOO): such a build runs single-process only and says so at world size > 1.
#ifdef RECBOLE_WITHOUT_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

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
    s.local_rank =
        env("RECBOLE_LOCAL_RANK") ? env_int("RECBOLE_LOCAL_RANK", "recbole_run") : s.rank;
    if (env("RECBOLE_MASTER_PORT")) s.master_port = env_port("RECBOLE_MASTER_PORT", "recbole_run");
    // --nproc starts its processes on this machine; with --offset, the world spans machines.
    s.local_world_size = env("RECBOLE_LOCAL_WORLD_SIZE")
                             ? env_int("RECBOLE_LOCAL_WORLD_SIZE", "recbole_run")
                             : s.world_size;
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
    s.local_rank =
        env("OMPI_COMM_WORLD_LOCAL_RANK") ? env_int("OMPI_COMM_WORLD_LOCAL_RANK", "OpenMPI") : 0;
    s.local_world_size = env("OMPI_COMM_WORLD_LOCAL_SIZE")
                             ? env_int("OMPI_COMM_WORLD_LOCAL_SIZE", "OpenMPI")
                             : s.world_size;
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
                         ? static_cast<int>(config.get_int("local_rank"))
                         : 0;
      s.rank = s.local_rank + static_cast<int>(config.get_int("offset"));
      s.local_world_size = s.world_size;  // unknown: assume every process shares this machine
    }
  }
  s.gradient_exchange = config.get_string("gradient_exchange");
  if (!config.is_null("socket_ifname"))
    s.socket_ifname = config.get_string("socket_ifname");
  else if (env("GLOO_SOCKET_IFNAME"))
    s.socket_ifname = env("GLOO_SOCKET_IFNAME");
  if (s.world_size < 1 || s.rank < 0 || s.rank >= s.world_size)
    throw DistError("launcher " + s.launcher + " gave rank " + std::to_string(s.rank) +
                    " and world size " + std::to_string(s.world_size) +
                    ": expected 0 <= rank < world size");
  return s;
}

#ifdef RECBOLE_WITHOUT_GLOO
using GlooGroup = c10d::ProcessGroup;  // never made: Dist refuses world size > 1 first
#else
using GlooGroup = c10d::ProcessGroupGloo;
#endif

struct Dist::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<GlooGroup> gloo;
  // A listening socket nobody accepts from: after a failed collective, a peer's kernel
  // answering a connect to it tells a live host from a dead process (refused) or a host that
  // cannot be reached (no answer).
  int probe_fd = -1;
  std::vector<std::string> probe_addrs;  // per rank: "address:port"
  ~Impl() {
    if (probe_fd >= 0) ::close(probe_fd);
  }
};

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

std::string this_hostname() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string address_text(const sockaddr* a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, buf, sizeof buf);
  else if (a->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, buf, sizeof buf);
  return buf;
}

// The local address of the route to `host`: a UDP socket connect()ed there sends nothing, but
// the kernel picks the source address it would use. On rank 0's machine this is rank 0's own
// address; elsewhere it is the address of the interface that reaches it. ([[maybe_unused]]: a
// build without Gloo calls none of the three helpers of the process group's set-up.)
[[maybe_unused]] std::string local_address_towards(const std::string& host, int port,
                                                   const std::string& where) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0 || found == nullptr)
    throw DistError("cannot resolve the rank-0 address \"" + host + "\" (" + ::gai_strerror(gai) +
                    "): set ip (or MASTER_ADDR) to a reachable host name or address; " + where);
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      ::close(fd);
      ::freeaddrinfo(found);
      return address_text(reinterpret_cast<sockaddr*>(&local));
    }
    error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw DistError("no route from this host (" + this_hostname() + ") to the rank-0 address " +
                  host + " (" + error +
                  "): check that the machine running rank 0 is up and reachable "
                  "from here (ping " +
                  host +
                  "), or name the interface to use with "
                  "GLOO_SOCKET_IFNAME or socket_ifname; " +
                  where);
}

// The first IPv4 (else IPv6) address of interface `ifname`, or "" when it has none.
[[maybe_unused]] std::string interface_address(const std::string& ifname) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string v4, v6;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || ifname != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET && v4.empty()) v4 = address_text(i->ifa_addr);
    if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) v6 = address_text(i->ifa_addr);
  }
  ::freeifaddrs(list);
  return v4.empty() ? v6 : v4;
}

// Listens on `address`, port chosen by the kernel; returns the fd and sets `port`, or -1.
[[maybe_unused]] int open_probe_listener(const std::string& address, int& port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    len = sizeof *v6;
  } else {
    return -1;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

// For each "address:port" (empty: skipped), whether a TCP connect succeeds within `seconds`:
// "reachable", "not running (connection refused)" or "unreachable (no answer within N s)".
std::vector<std::string> probe_peers(const std::vector<std::string>& targets, double seconds) {
  std::vector<std::string> verdict(targets.size());
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  for (size_t i = 0; i < targets.size(); ++i) {
    const size_t colon = targets[i].rfind(':');
    if (targets[i].empty() || colon == std::string::npos) continue;
    const std::string host = targets[i].substr(0, colon), port = targets[i].substr(colon + 1);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* a = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &a) != 0 || a == nullptr) continue;
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      const int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
      if (rc == 0) {
        verdict[i] = "reachable";
        ::close(fd);
      } else if (errno == EINPROGRESS) {
        fds.push_back({fd, POLLOUT, 0});
        which.push_back(i);
      } else {
        verdict[i] = errno == ECONNREFUSED || errno == ECONNRESET
                         ? "not running (connection refused)"
                         : std::string("unreachable (") + std::strerror(errno) + ")";
        ::close(fd);
      }
    }
    ::freeaddrinfo(a);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  size_t open = fds.size();
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0 || ::poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fds[k].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      verdict[which[k]] = err == 0 ? "reachable"
                          : err == ECONNREFUSED || err == ECONNRESET
                              ? "not running (connection refused)"
                              : std::string("unreachable (") + std::strerror(err) + ")";
      ::close(fds[k].fd);
      fds[k].fd = -1;
      --open;
    }
  }
  for (size_t k = 0; k < fds.size(); ++k)
    if (fds[k].fd >= 0) {
      verdict[which[k]] = "unreachable (no answer within " + seconds_text(seconds) + ")";
      ::close(fds[k].fd);
    }
  return verdict;
}

std::string where(const DistSettings& s) {
  return "store " + s.master_addr + ":" + std::to_string(s.master_port) + ", rank " +
         std::to_string(s.rank) + " of world size " + std::to_string(s.world_size) + " (launcher " +
         s.launcher + ", dist_timeout " + seconds_text(s.timeout_s) + ")";
}

}  // namespace

Dist::Dist(const DistSettings& settings, bool cuda) : settings_(settings), host_(this_hostname()) {
  if (settings_.world_size <= 1) return;  // single process: never touch c10d
  if (cuda || settings_.backend == "nccl")
    throw DistError("the NCCL backend is not available in this build of recbole-cpp (libtorch " +
                    std::string(TORCH_VERSION) + "); use dist_backend: gloo and device: cpu");
#ifdef RECBOLE_WITHOUT_GLOO
  throw DistError("world size " + std::to_string(settings_.world_size) +
                  " needs Gloo, and this build of recbole-cpp has none: its libtorch (" +
                  std::string(TORCH_VERSION) +
                  ") came without Gloo's headers (gloo/algorithm.h), as PyTorch's pip wheels do; "
                  "build against a libtorch that has them (Debian's libtorch-dev does) to train "
                  "with several processes");
#else
  impl_ = std::make_unique<Impl>();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(settings_.timeout_s * 1000));
  // The address Gloo binds to: the named interface's, else the one that routes to rank 0 (the
  // rank-0 address itself is local only on rank 0's machine). A name that does not resolve
  // fails here at once instead of costing the whole dist_timeout in retries.
  std::string address;
  if (!settings_.socket_ifname.empty()) {
    address = interface_address(settings_.socket_ifname);
    if (address.empty())
      throw DistError("network interface \"" + settings_.socket_ifname +
                      "\" (socket_ifname or "
                      "GLOO_SOCKET_IFNAME) has no address on host " +
                      host_ +
                      ": expected the name of an interface that reaches rank 0 (see `ip addr`); " +
                      where(settings_));
  } else {
    address = local_address_towards(settings_.master_addr, settings_.master_port,
                                    "host " + host_ + ", " + where(settings_));
  }
  host_ += " (" + address + ")";
  // Said before waiting: a rank whose peers never come waits dist_timeout (30 min by default).
  log::info("joining the process group from host " + host_ + ": " + where(settings_));
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(settings_.master_port);
    opts.isServer = settings_.rank == 0 && !settings_.store_hosted_by_launcher;
    opts.numWorkers = settings_.world_size;
    opts.waitWorkers = false;
    opts.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(settings_.master_addr, opts);
  } catch (const std::exception& e) {
    throw DistError("cannot reach the store from host " + host_ + ": " + where(settings_) + ": " +
                    short_message(e) +
                    "\nCheck that rank 0's machine is up and reachable from this one, that every "
                    "rank uses the same address and port (ip/port, MASTER_ADDR/MASTER_PORT), that "
                    "rank 0 is running and its port is free and not blocked by a firewall.");
  }
  // A rank started with another world size would otherwise wait dist_timeout for ranks that
  // never come; the first rank to arrive records its world size and the others compare.
  const std::string mine = std::to_string(settings_.world_size);
  std::vector<uint8_t> declared;
  try {
    declared = impl_->store->compareSet("recbole/world_size", {},
                                        std::vector<uint8_t>(mine.begin(), mine.end()));
  } catch (const std::exception&) {  // a store without compareSet: skip the early check
    declared.assign(mine.begin(), mine.end());
  }
  if (std::string(declared.begin(), declared.end()) != mine)
    throw DistError("world size mismatch: this rank (host " + host_ +
                    ") was started with world "
                    "size " +
                    mine + ", another rank with " + std::string(declared.begin(), declared.end()) +
                    "; start every rank with the same WORLD_SIZE / world_size; " +
                    where(settings_));
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(
        !settings_.socket_ifname.empty()
            ? c10d::ProcessGroupGloo::createDeviceForInterface(settings_.socket_ifname)
            : c10d::ProcessGroupGloo::createDeviceForHostname(address));
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, settings_.rank,
                                                              settings_.world_size, options);
    // Every rank's host and probe port, for messages that name the machine of a lost peer.
    int probe_port = 0;
    impl_->probe_fd = open_probe_listener(address, probe_port);
    const std::string me =
        host_ + "\n" + (impl_->probe_fd >= 0 ? address + ":" + std::to_string(probe_port) : "");
    impl_->store->set("recbole/host/" + std::to_string(settings_.rank),
                      std::vector<uint8_t>(me.begin(), me.end()));
    for (int r = 0; r < settings_.world_size; ++r) {
      const auto v = impl_->store->get("recbole/host/" + std::to_string(r));
      const std::string text(v.begin(), v.end());
      const size_t nl = text.find('\n');
      hosts_.push_back(text.substr(0, nl));
      impl_->probe_addrs.push_back(nl == std::string::npos ? "" : text.substr(nl + 1));
    }
  } catch (const std::exception& e) {
    throw DistError("cannot join the process group from host " + host_ + " at " + where(settings_) +
                    ": " + short_message(e) +
                    "\nCheck that every rank uses the same address and port (ip/port, "
                    "MASTER_ADDR/MASTER_PORT), that rank 0 is running and the port is free and "
                    "reachable, that WORLD_SIZE matches the number of processes started, and that "
                    "every machine can reach every other one (Gloo connects all ranks pairwise; "
                    "GLOO_SOCKET_IFNAME or socket_ifname picks the interface).");
  }
  log::info("process group ready: rank " + std::to_string(settings_.rank) + " of " +
            std::to_string(settings_.world_size) + " on host " + host_ + " (Gloo bound to " +
            (settings_.socket_ifname.empty() ? "the route to " + settings_.master_addr
                                             : "interface " + settings_.socket_ifname) +
            ")");
#endif
}

Dist::~Dist() = default;

std::string Dist::host_of(int rank) const {
  if (rank >= 0 && rank < static_cast<int>(hosts_.size())) return hosts_[rank];
  return rank == settings_.rank ? host_ : "unknown host";
}

template <typename F>
void Dist::run_collective(const std::string& what, int64_t bytes, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto work = f();
    work->wait();
  } catch (const std::exception& e) {
    // Which peers are gone: each other rank's probe listener either answers (alive), refuses
    // (its process died) or stays silent (its host is down or cut off).
    std::vector<std::string> targets = impl_->probe_addrs;
    if (settings_.rank < static_cast<int>(targets.size())) targets[settings_.rank].clear();
    const std::vector<std::string> verdict = probe_peers(targets, 2.0);
    std::string lost, alive;
    for (size_t r = 0; r < verdict.size(); ++r) {
      if (verdict[r].empty()) continue;
      std::string& list = verdict[r] == "reachable" ? alive : lost;
      list += std::string(list.empty() ? "" : "; ") + "rank " + std::to_string(r) + " on host " +
              host_of(static_cast<int>(r)) + (verdict[r] == "reachable" ? "" : ": " + verdict[r]);
    }
    throw DistError(
        what + " failed on host " + host_ + " at " + where(settings_) + ": " + short_message(e) +
        (lost.empty() ? "\nA peer process probably died or stopped responding; see its log."
                      : "\nNot answering (a process that exited may have stopped "
                        "because of this same failure): " +
                            lost + ".") +
        (alive.empty() ? "" : "\nStill answering: " + alive + "."));
  }
  traffic_.collectives += 1;
  traffic_.bytes += bytes;
  traffic_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Dist::barrier(const std::string& what) {
  if (!active()) return;
  // A barrier is an all-reduce of one element: Gloo's barrier ignores the timeout on some paths.
  torch::Tensor t = torch::zeros({1});
  run_collective("barrier (" + what + ")", 4, [&] {
    std::vector<torch::Tensor> v{t};
    return impl_->gloo->allreduce(v);
  });
}

void Dist::all_reduce_sum(torch::Tensor& t) {
  if (!active()) return;
  run_collective("all-reduce", static_cast<int64_t>(t.nbytes()), [&] {
    std::vector<torch::Tensor> v{t};
    return impl_->gloo->allreduce(v);
  });
}

void Dist::broadcast(torch::Tensor& t, int root) {
  if (!active()) return;
  run_collective("broadcast", settings_.rank == root ? static_cast<int64_t>(t.nbytes()) : 0, [&] {
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
  run_collective("all-gather", 8, [&] {
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
  run_collective("all-gather", static_cast<int64_t>(padded.nbytes()), [&] {
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

std::vector<torch::Tensor> Dist::all_gather(const torch::Tensor& t) {
  if (!active()) return {t};
  torch::Tensor in = t.contiguous();
  std::vector<torch::Tensor> parts(settings_.world_size);
  for (auto& p : parts) p = torch::empty_like(in);
  run_collective("all-gather", static_cast<int64_t>(in.nbytes()), [&] {
    std::vector<std::vector<torch::Tensor>> out{parts};
    std::vector<torch::Tensor> v{in};
    auto w = impl_->gloo->allgather(out, v);
    w->wait();
    parts = out[0];
    return w;
  });
  return parts;
}

}  // namespace recbole

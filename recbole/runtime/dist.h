#pragma once
// Dist: the one object that owns rank, local rank, world size and the process group.
//
// World size 1: no process group is ever created and every collective returns at once, so a
// single-process run never touches c10d (RecBole's "Default process group has not been
// initialized" after a download cannot happen). World size > 1: collectives go through c10d
// (Gloo for CPU tensors, NCCL for CUDA). Every rank runs the same code path; rank-specific work
// is followed by a barrier that all ranks reach.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace recbole::config {
class Config;
}

namespace recbole {

struct DistSettings {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;  // processes on this machine (sizes the CPU thread pool)
  std::string master_addr = "127.0.0.1";
  int master_port = 5678;
  double timeout_s = 1800;
  std::string backend = "auto";           // auto | gloo | nccl
  std::string launcher = "none";          // none | recbole | torchrun | openmpi | slurm | config
  bool store_hosted_by_launcher = false;  // torchrun hosts the store: every rank is a client
  // The network interface Gloo binds to (config key socket_ifname, else GLOO_SOCKET_IFNAME);
  // empty: the local address of the route to master_addr.
  std::string socket_ifname;
  std::string gradient_exchange = "auto";  // auto | dense | sparse (trainer/gradient_exchange.h)
};

// Reads rank and world size from the launcher that started this process, whichever it is:
// recbole_run --nproc (RECBOLE_* variables), torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT), OpenMPI (OMPI_COMM_WORLD_*), Slurm (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID), or the config keys (world_size, offset, ip, port). Nothing found: rank 0 of 1.
// recbole_run --nproc=N --world_size=W --offset=K (RecBole's multi-node form) gives ranks
// K..K+N-1 of W, with N processes on this machine.
DistSettings detect_dist_settings(const config::Config& config);

class Dist {
 public:
  // World size 1 creates nothing. Otherwise connects to the store and creates the process
  // group, or throws DistError naming address, port, rank, world size and what to check.
  explicit Dist(const DistSettings& settings = DistSettings(), bool cuda = false);
  ~Dist();
  Dist(const Dist&) = delete;
  Dist& operator=(const Dist&) = delete;

  int rank() const { return settings_.rank; }
  int local_rank() const { return settings_.local_rank; }
  int world_size() const { return settings_.world_size; }
  int local_world_size() const { return settings_.local_world_size; }
  bool is_main() const { return settings_.rank == 0; }
  bool is_local_main() const { return settings_.local_rank == 0; }
  bool active() const { return settings_.world_size > 1; }
  const DistSettings& settings() const { return settings_; }
  // This machine's name and the address Gloo bound to ("node-a (10.77.0.2)"); at world size 1
  // the machine's name alone.
  const std::string& host() const { return host_; }
  // The host() of another rank, exchanged once through the store when the group is created.
  std::string host_of(int rank) const;

  void barrier(const std::string& what = "barrier");
  // In-place sum over ranks of a dense tensor (any device the backend supports).
  void all_reduce_sum(torch::Tensor& t);
  void broadcast(torch::Tensor& t, int root = 0);
  // Concatenation over ranks (rank order) of 1-D CPU tensors of any length.
  torch::Tensor all_gather_cat(const torch::Tensor& t);
  // Every rank's tensor, in rank order; all ranks pass tensors of one shape and dtype (CPU).
  std::vector<torch::Tensor> all_gather(const torch::Tensor& t);

  // Totals over this process's collectives: bytes handed to them (this rank's contribution,
  // not what the algorithm puts on the wire) and seconds spent waiting for them.
  struct Traffic {
    int64_t collectives = 0;
    int64_t bytes = 0;
    double seconds = 0;
  };
  const Traffic& traffic() const { return traffic_; }

  // State the gradient exchange (trainer/gradient_exchange.h) keeps from one step to the next:
  // derived from collective results only, so the same on every rank.
  std::vector<int64_t>& exchange_state() { return exchange_state_; }

 private:
  struct Impl;
  template <typename F>
  void run_collective(const std::string& what, int64_t bytes, F&& f);

  DistSettings settings_;
  std::string host_;
  std::vector<std::string> hosts_;  // host() of every rank
  Traffic traffic_;
  std::vector<int64_t> exchange_state_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace recbole

#pragma once
// DeviceManager: the only object that decides where tensors live, and the only place that asks
// whether CUDA exists. It also owns seeding and the thread settings: libtorch's intra-op threads,
// the ThreadPool that runs recbole's own CPU kernels, and the BLAS threads.
//
// Every model receives it and creates parameters and outputs on device(); the trainer and the
// evaluator call check() on every model output, so a tensor on the wrong device is a DeviceError
// naming the model and the tensor, never a silent copy and never a crash inside libtorch.
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "recbole/data/batch.h"

namespace recbole::config {
class Config;
}

namespace recbole {

struct DeviceSettings {
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  std::string gpu_id;           // RecBole's gpu_id: "" forces the CPU when device is auto
  bool strict = false;          // CUDA asked for but absent: error instead of warning + CPU
  int local_rank = 0;           // with device cuda (no index), rank r uses cuda:r
  uint64_t seed = 2020;
  bool reproducibility = true;
  int num_threads = 0;        // recbole's CPU pool and BLAS threads; 0 = cores / local procs
  int torch_num_threads = 1;  // libtorch intra-op threads; 0 = leave libtorch's default
  int local_world_size = 1;   // processes sharing this machine (divide the cores)
};

class DeviceManager {
 public:
  explicit DeviceManager(const DeviceSettings& settings = DeviceSettings());
  static DeviceManager from_config(const config::Config& config, int local_rank = 0,
                                   int local_world_size = 1);

  const torch::Device& device() const { return device_; }
  bool is_cuda() const { return device_.is_cuda(); }
  std::string name() const { return device_.str(); }

  torch::TensorOptions float_options() const {
    return torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  }
  torch::TensorOptions long_options() const {
    return torch::TensorOptions().dtype(torch::kInt64).device(device_);
  }

  // Copies a CPU tensor (batches, index lists, masks) to the device; a no-op on the CPU.
  torch::Tensor place(const torch::Tensor& t) const;
  // Every defined column of a batch built on the CPU, moved to the device in one call.
  data::Batch place(data::Batch batch) const;

  // Brings a tensor to host memory for CPU-side work (top-K lists, sparse loops, hashes); the
  // only other way tensors move. A no-op for CPU tensors.
  static torch::Tensor to_host(const torch::Tensor& t) {
    return t.is_cpu() ? t : t.to(torch::kCPU);
  }

  // Throws DeviceError unless `t` is defined and on device(): "<model>: <what> is on cuda:0,
  // expected cpu (the device manager's device)".
  void check(const torch::Tensor& t, const std::string& model, const std::string& what) const;

  // Seeds libtorch's CPU (and CUDA) generators.
  void seed(uint64_t seed) const;
  // The state of libtorch's CPU generator and, on CUDA, of this device's generator (what dropout
  // and other torch draws read next), as uint8 CPU tensors: a resume checkpoint keeps them.
  std::vector<torch::Tensor> generator_states() const;
  // Restores generator_states(); a list of another length is an Error.
  void set_generator_states(const std::vector<torch::Tensor>& states) const;
  uint64_t base_seed() const { return settings_.seed; }

  static bool cuda_available();

  // Threads of the CPU pool (the resolved num_threads).
  int cpu_threads() const { return cpu_threads_; }

 private:
  DeviceSettings settings_;
  torch::Device device_;
  int cpu_threads_ = 1;
};

}  // namespace recbole

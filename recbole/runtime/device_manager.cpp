#include "recbole/runtime/device_manager.h"

#include <cstdlib>

#include <torch/torch.h>

#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/thread_pool.h"
#include "recbole/utils/torch_compat.h"

namespace recbole {
namespace {

// Resolves the requested device string to a torch::Device, falling back to the CPU (with a
// warning) when CUDA is not usable and the user did not ask for strictness.
torch::Device resolve(const DeviceSettings& s) {
  std::string spec = s.device.empty() ? "auto" : s.device;
  if (spec == "auto") {
    // RecBole: an empty gpu_id means the CPU even when CUDA exists.
    if (s.gpu_id.empty() || !compat::cuda_available()) return torch::Device(torch::kCPU);
    spec = "cuda";
  }
  if (spec == "cpu") return torch::Device(torch::kCPU);
  if (spec.rfind("cuda", 0) != 0)
    throw ConfigError("device: expected auto, cpu, cuda or cuda:N, got \"" + spec + "\"");
  int index = s.local_rank;
  if (spec.size() > 4) {
    if (spec[4] != ':' || spec.size() == 5)
      throw ConfigError("device: expected auto, cpu, cuda or cuda:N, got \"" + spec + "\"");
    try {
      index = std::stoi(spec.substr(5));
    } catch (const std::exception&) {
      throw ConfigError("device: expected auto, cpu, cuda or cuda:N, got \"" + spec + "\"");
    }
  }
  if (!compat::cuda_available() || index >= compat::cuda_device_count()) {
    const std::string why =
        compat::cuda_available()
            ? "only " + std::to_string(compat::cuda_device_count()) + " CUDA device(s) are visible"
            : "this libtorch has no CUDA or no GPU is visible";
    if (s.strict)
      throw DeviceError("device: cuda:" + std::to_string(index) + " was asked for but " + why +
                        " (strict_device is set)");
    log::warning("device: cuda:" + std::to_string(index) + " was asked for but " + why +
                 "; running on the CPU (set strict_device: true to make this an error)");
    return torch::Device(torch::kCPU);
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

DeviceManager::DeviceManager(const DeviceSettings& settings)
    : settings_(settings), device_(resolve(settings)) {
  // Measured on the 2-core VMs: libtorch with 2 intra-op threads made small ops ~35x slower
  // than with 1, so libtorch keeps 1 (torch_num_threads raises it) and the loops worth
  // splitting run on recbole's ThreadPool, which gets the cores (shared among the processes
  // of this machine). BLAS gets the same count for the large products of fits; the CPU
  // evaluation kernel lowers it to 1 per worker while it runs.
  if (settings_.torch_num_threads > 0) torch::set_num_threads(settings_.torch_num_threads);
  cpu_threads_ =
      settings_.num_threads > 0
          ? resolve_num_threads(settings_.num_threads)
          : std::max(1, resolve_num_threads(0) / std::max(1, settings_.local_world_size));
  ThreadPool::instance().set_threads(cpu_threads_);
  set_blas_threads(cpu_threads_);
  if (device_.is_cuda() && settings_.reproducibility) {
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
    // Beyond RecBole (cuDNN only): the atomics of CUDA's index_add (every embedding lookup's
    // gradient) make a seed repeat only to rounding. Deterministic kernels where libtorch has
    // them (a warning names an op without one); cuBLAS needs its fixed workspace for that, set
    // before its first handle unless the user set it.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  seed(settings_.seed);
}

DeviceManager DeviceManager::from_config(const config::Config& config, int local_rank,
                                         int local_world_size) {
  DeviceSettings s;
  s.device = config.is_null("device") ? "auto" : config.get_string("device");
  s.gpu_id = config.is_null("gpu_id") ? "" : config.node("gpu_id").as<std::string>();
  s.strict = config.has("strict_device") && config.get_bool("strict_device");
  s.local_rank = local_rank;
  s.seed = static_cast<uint64_t>(config.get_int("seed"));
  s.reproducibility = config.get_bool("reproducibility");
  s.num_threads = static_cast<int>(config.get_int("num_threads"));
  s.torch_num_threads = static_cast<int>(config.get_int("torch_num_threads"));
  s.local_world_size = local_world_size;
  return DeviceManager(s);
}

torch::Tensor DeviceManager::place(const torch::Tensor& t) const {
  if (!t.defined() || t.device() == device_) return t;
  return t.to(device_, /*non_blocking=*/t.is_pinned());
}

data::Batch DeviceManager::place(data::Batch batch) const {
  batch.for_each_column([this](torch::Tensor& t) { t = place(t); });
  return batch;
}

void DeviceManager::check(const torch::Tensor& t, const std::string& model,
                          const std::string& what) const {
  if (!t.defined()) throw DeviceError(model + ": " + what + " is an undefined tensor");
  if (t.device() != device_)
    throw DeviceError(model + ": " + what + " is on " + t.device().str() + ", expected " +
                      device_.str() + " (the device manager's device); create it with the " +
                      "device manager's options instead of the default device");
}

void DeviceManager::seed(uint64_t s) const {
  torch::manual_seed(s);
  if (device_.is_cuda()) torch::cuda::manual_seed_all(s);
}

namespace {

// The generators a run draws from: the CPU one always, the device's own on CUDA.
std::vector<at::Generator> run_generators(const torch::Device& device) {
  std::vector<at::Generator> gens{at::globalContext().defaultGenerator(torch::Device(torch::kCPU))};
  if (device.is_cuda()) gens.push_back(at::globalContext().defaultGenerator(device));
  return gens;
}

}  // namespace

std::vector<torch::Tensor> DeviceManager::generator_states() const {
  std::vector<torch::Tensor> states;
  for (at::Generator& g : run_generators(device_)) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return states;
}

void DeviceManager::set_generator_states(const std::vector<torch::Tensor>& states) const {
  std::vector<at::Generator> gens = run_generators(device_);
  if (states.size() != gens.size())
    throw Error("generator states: expected " + std::to_string(gens.size()) + " (" +
                (device_.is_cuda() ? "CPU and CUDA" : "CPU") + "), got " +
                std::to_string(states.size()));
  for (size_t k = 0; k < gens.size(); ++k) {
    std::lock_guard<std::mutex> lock(gens[k].mutex());
    gens[k].set_state(states[k]);
  }
}

bool DeviceManager::cuda_available() { return compat::cuda_available(); }

}  // namespace recbole

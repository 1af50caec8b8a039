#pragma once
// The one place where differences between libtorch versions are handled (Debian's 1.13 CPU
// build here; 2.x with CUDA on the GPU machines). Include this instead of spelling
// version-dependent API in several files.
#include <torch/torch.h>
#include <torch/version.h>

#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
#define RECBOLE_TORCH2 1
#else
#define RECBOLE_TORCH2 0
#endif

namespace recbole::compat {

// A CPU generator seeded like `torch.manual_seed(seed)` seeds Python's default generator.
inline at::Generator make_cpu_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

// Whether this libtorch was built with CUDA and a device is visible.
inline bool cuda_available() { return torch::cuda::is_available(); }

inline int64_t cuda_device_count() { return static_cast<int64_t>(torch::cuda::device_count()); }

}  // namespace recbole::compat

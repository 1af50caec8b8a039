#pragma once
// The one place where differences between libtorch versions are handled (Debian's 1.13 CPU
// build here; 2.x with CUDA on the GPU machines). Include this instead of spelling
// version-dependent API in several files.
#include <sstream>
#include <string>

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

// The key of parameter `p` in 1.13's optimizer state() map: its TensorImpl's address as text, as
// 1.13 writes it (c10::guts::to_string streams a pointer; 2.x dropped that function).
inline std::string tensor_impl_key(const torch::Tensor& p) {
  std::ostringstream key;
  key << p.unsafeGetTensorImpl();
  return key.str();
}

// Whether an optimizer's state() map holds state for parameter `p` (it has stepped it). The map
// is keyed by the parameter's TensorImpl: as a string in 1.13, as a pointer in later versions
// (a template, so that only the matching branch is compiled).
template <typename StateMap>
bool has_state_for(const StateMap& state, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>)
    return state.count(tensor_impl_key(p)) > 0;
  else
    return state.count(static_cast<Key>(p.unsafeGetTensorImpl())) > 0;
}
inline bool has_optimizer_state(torch::optim::Optimizer& optimizer, const torch::Tensor& p) {
  return has_state_for(optimizer.state(), p);
}
// The state slot of parameter `p` in an optimizer's state() map (created empty when absent).
template <typename StateMap>
typename StateMap::mapped_type& optimizer_state_slot(StateMap& state, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>)
    return state[tensor_impl_key(p)];
  else
    return state[static_cast<Key>(p.unsafeGetTensorImpl())];
}

}  // namespace recbole::compat

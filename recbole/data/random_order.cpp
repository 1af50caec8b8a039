#include "recbole/data/random_order.h"

#include <torch/torch.h>

namespace recbole::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  const torch::Tensor perm =
      torch::randperm(n, generator, torch::TensorOptions().dtype(torch::kInt64)).contiguous();
  const int64_t* data = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + n);
}

}  // namespace recbole::data

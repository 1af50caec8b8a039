#pragma once
// MLP: RecBole's MLPLayers. For each consecutive pair of sizes: Dropout(p) → Linear →
// activation, the activation after the last Linear too (unless last_activation is false).
// Linear layers keep libtorch's default initialisation unless the model re-initialises them
// (init.h).
#include <string>
#include <vector>

#include <torch/torch.h>

namespace recbole::models::layers {

// "relu", "tanh", "sigmoid", "leakyrelu", "none"; anything else is a ConfigError naming `key`.
torch::Tensor activate(const torch::Tensor& x, const std::string& activation);
// Those names, for a key's choices.
std::vector<std::string> activation_names();
void check_activation(const std::string& activation, const std::string& key);

class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(std::vector<int64_t> sizes, double dropout, std::string activation,
          bool last_activation = true);
  // x: [..., sizes.front()] → [..., sizes.back()].
  torch::Tensor forward(torch::Tensor x);
  const std::vector<torch::nn::Linear>& linears() const { return linears_; }

 private:
  std::vector<torch::nn::Linear> linears_;
  double dropout_;
  std::string activation_;
  bool last_activation_;
};
TORCH_MODULE(MLP);

}  // namespace recbole::models::layers

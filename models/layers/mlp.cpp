#include "models/layers/mlp.h"

#include "models/layers/dropout.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

std::vector<std::string> activation_names() {
  return {"relu", "tanh", "sigmoid", "leakyrelu", "none"};
}

void check_activation(const std::string& activation, const std::string& key) {
  for (const std::string& known : activation_names())
    if (activation == known) return;
  throw ConfigError(key + ": unknown activation \"" + activation +
                    "\"; expected relu, tanh, sigmoid, leakyrelu or none");
}

torch::Tensor activate(const torch::Tensor& x, const std::string& activation) {
  if (activation == "relu") return torch::relu(x);
  if (activation == "tanh") return torch::tanh(x);
  if (activation == "sigmoid") return torch::sigmoid(x);
  if (activation == "leakyrelu") return torch::leaky_relu(x);
  if (activation == "none") return x;
  throw Error("unknown activation \"" + activation + "\"");
}

MLPImpl::MLPImpl(std::vector<int64_t> sizes, double dropout, std::string activation,
                 bool last_activation)
    : dropout_(dropout), activation_(std::move(activation)), last_activation_(last_activation) {
  check_activation(activation_, "activation");
  for (size_t k = 0; k + 1 < sizes.size(); ++k)
    linears_.push_back(
        register_module("linear" + std::to_string(k), torch::nn::Linear(sizes[k], sizes[k + 1])));
}

torch::Tensor MLPImpl::forward(torch::Tensor x) {
  for (size_t k = 0; k < linears_.size(); ++k) {
    if (dropout_ > 0) x = layers::dropout(x, dropout_, is_training());
    x = linears_[k]->forward(x);
    if (k + 1 < linears_.size() || last_activation_) x = activate(x, activation_);
  }
  return x;
}

}  // namespace recbole::models::layers

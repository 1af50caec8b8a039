#include "models/layers/init.h"

#include <string>

namespace recbole::models::layers {
namespace {

void init_tensor(torch::Tensor& w, Init init) {
  switch (init) {
    case Init::kXavierNormal:
      torch::nn::init::xavier_normal_(w);
      break;
    case Init::kXavierUniform:
      torch::nn::init::xavier_uniform_(w);
      break;
    case Init::kNormal001:
      torch::nn::init::normal_(w, 0.0, 0.01);
      break;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The module and its descendants in pre-order (Module::modules(include_self = true) needs the
// module to be held by a shared_ptr already, which a model under construction is not).
template <typename F>
void for_each_module(torch::nn::Module& module, F&& f) {
  f(module);
  for (auto& m : module.modules(/*include_self=*/false)) f(*m);
}

}  // namespace

void initialize(torch::nn::Module& module, Init init) {
  torch::NoGradGuard no_grad;
  for_each_module(module, [&](torch::nn::Module& m) {
    if (auto* linear = m.as<torch::nn::Linear>()) {
      init_tensor(linear->weight, init);
      if (linear->bias.defined()) linear->bias.zero_();
      return;
    }
    if (auto* table = m.as<torch::nn::Embedding>()) {
      init_tensor(table->weight, init);
      return;
    }
    for (auto& p : m.named_parameters(/*recurse=*/false))
      if (p.value().dim() == 2 && ends_with(p.key(), "embedding")) init_tensor(p.value(), init);
  });
}

torch::Tensor new_table(int64_t rows, int64_t cols, Init init) {
  torch::NoGradGuard no_grad;
  torch::Tensor t = torch::empty({rows, cols});
  init_tensor(t, init);
  return t;
}

void normal_linears(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  for_each_module(module, [&](torch::nn::Module& m) {
    if (auto* linear = m.as<torch::nn::Linear>()) {
      torch::nn::init::normal_(linear->weight, 0.0, std);
      if (linear->bias.defined()) linear->bias.zero_();
    }
  });
}

}  // namespace recbole::models::layers

#pragma once
// RecBole's initialisers (recbole/model/init.py) over a module tree: every Linear's weight
// (bias := 0) and every parameter registered as an embedding table (a 2-D parameter whose name
// ends in "embedding"). Other parameters keep their own initialisation, as in RecBole.
// Run on the CPU before the model moves to its device, so that a seed gives the same weights
// on every device.
#include <torch/torch.h>

namespace recbole::models::layers {

enum class Init { kXavierNormal, kXavierUniform, kNormal001 };  // N(0, 0.01²) for the last

// `module` and its descendants, in pre-order; callable from a model's constructor.
void initialize(torch::nn::Module& module, Init init);

// A new [rows, cols] CPU table initialised as `init` (an embedding table as RecBole initialises
// it), drawn from the seeded global generator; the model places it on its device.
torch::Tensor new_table(int64_t rows, int64_t cols, Init init);

// Every Linear under `module`: weight N(0, std²), bias 0 (DMF, NeuMF's output layer options).
void normal_linears(torch::nn::Module& module, double std);

}  // namespace recbole::models::layers

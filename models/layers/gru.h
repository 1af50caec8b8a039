#pragma once
// A stacked GRU without biases (RecBole's GRU4Rec and NARM: nn.GRU(bias=False, batch_first))
// as one autograd node per layer on the CPU.
//
// Why: libtorch's GRU runs a cell per time step as ~15 element-wise kernels forward and as many
// backward, each with autograd bookkeeping, on a 128-row micro-batch: at ml-100k's 50 steps that
// overhead and the per-step weight-gradient products were ~45 % of a GRU4Rec epoch, the GEMMs
// the rest. Here a step is one GEMM (h·W_hhᵀ) and one vectorised pass computing r, z, n and h'
// (sigmoid as ½(1 + tanh(x/2)), simd::tanh); the backward is one pass and one GEMM a step, and
// the weight gradients are one GEMM each over all steps, every GEMM on libxsmm's kernels
// (jit_gemm.h: a GRU4Rec epoch 7.25 s against 12.26 on OpenBLAS's AVX2 kernels). Elsewhere (CUDA,
// float64, a GRU with biases, dropout or two directions) it is libtorch's GRU. Both give the same
// outputs and gradients up to float rounding (tests/models/test_layers.cpp); the fused one has no
// double backward.
#include <torch/torch.h>

namespace recbole::models::layers {

// gru's outputs at every step from a zero initial state, as std::get<0>(gru->forward(x)).
// gru: batch_first; x: [B, T, input_size] on gru's device → [B, T, hidden_size], with gradients
// to x and gru's weights.
torch::Tensor gru_outputs(torch::nn::GRU& gru, const torch::Tensor& x);

}  // namespace recbole::models::layers

#pragma once
// Caser's horizontal convolutions: for each height h, nh filters of h × d slide over the rows of
// a sequence's item image, each followed by ReLU and a max over the positions — as one autograd
// node on the CPU.
//
// Why: composed, it is a libtorch Conv2d (1 → nh, kernel h × d) per height, fifty at RecBole's
// L = 50, each an im2col copy and a GEMM with nh = 8 output columns, then ReLU and max, and as
// many kernels backward; a Caser epoch took ~790 s. Fused, a window of h rows is h·d contiguous
// floats of the image, so each output is a dot product of contiguous memory; four windows and
// four filters at a time run in AVX-512 registers. The max keeps its argument, so the backward
// touches one window per filter: ~1/9 of the forward's work (the loops: kernels/horizontal_conv.h;
// this file keeps the autograd node and the composition). Elsewhere (CUDA, float64) it is the
// libtorch composition; both give the same values and gradients up to float rounding
// (tests/models/test_layers.cpp). The fused node has no double backward.
#include <torch/torch.h>

#include <vector>

namespace recbole::models::layers {

// x: [B, L, d] float; weights[i]: [nh, 1, h_i, d] and biases[i]: [nh], the Conv2d weights and
// biases of one height h_i (1 ≤ h_i ≤ L), all on x's device.
// → [B, nh · heights] float: column i·nh + f = max over the L − h_i + 1 windows p of
//   ReLU(biases[i][f] + Σ_{k < h_i} ⟨x[b, p + k], weights[i][f, 0, k]⟩),
// with gradients to x, the weights and the biases (at a tie, to the first window, as max).
torch::Tensor horizontal_conv_max(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases);

}  // namespace recbole::models::layers

#pragma once
// The transformer's "add & norm": LayerNorm(dropout(y) + x), as one autograd node on the CPU.
//
// Why: composed, it is five libtorch kernels forward (the dropout product, the residual sum,
// layer_norm's statistics and its affine map) and as many backward, each a pass over the layer's
// [B, L, d] hidden states, four times a transformer layer. At RecBole's d = 64 a row is four
// AVX-512 vectors: fused, each direction is one pass over the rows, with the row in registers or
// L1. Elsewhere (CUDA, float64) it is the libtorch composition. Both give the same values and
// gradients up to float rounding, and the same dropout draws (layers::dropout_mask with the
// same key): tests/models/test_layers.cpp. The fused node has no double backward.
#include <torch/torch.h>

namespace recbole::models::layers {

// y, x: [..., d] float, the same shape and device; weight, bias: [d], LayerNorm's affine map;
// eps: LayerNorm's; p: the dropout on y, applied only in training → LayerNorm(dropout(y) + x),
// [..., d], with gradients to y, x, weight and bias.
torch::Tensor residual_norm(const torch::Tensor& y, const torch::Tensor& x,
                            const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                            double p, bool training);

}  // namespace recbole::models::layers

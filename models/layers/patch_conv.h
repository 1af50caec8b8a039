#pragma once
// A convolution whose stride equals its kernel and that has no padding — each output reads its
// own patch, no two patches overlap — as one GEMM over the patches of channels-last maps.
//
// Why: libtorch's CPU Conv2d runs such a layer (ConvNCF's, kernels 4, 4, 2, 2 with equal
// strides) through its generic im2col path, an unfold and a small GEMM per map; cut into
// patches, the whole batch's layer is one reshape and one GEMM, with autograd through both.
// Rounding aside, it is the same function as Conv2d (tests/models/test_layers.cpp).
#include <torch/torch.h>

namespace recbole::models::layers {

// x: [N, H, W, C] (channels last); weight: [C_out, C, kh, kw] and bias: [C_out], a Conv2d's
// with stride (kh, kw) and no padding; same dtype and device.
// → [N, ⌊H / kh⌋, ⌊W / kw⌋, C_out], channels last: Conv2d(x as [N, C, H, W]) permuted. Rows and
// columns past the last whole patch are dropped, as Conv2d drops them.
torch::Tensor patch_conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias);

}  // namespace recbole::models::layers

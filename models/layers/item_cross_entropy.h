#pragma once
// Cross-entropy over every item — the loss of RecBole's CE-trained sequential models — as one
// autograd node on the CPU.
//
// Why: composed, libtorch runs the logits' GEMM, the bias, log_softmax (a pass for the maximum,
// one for the exponentials, one writing the result), nll_loss, and backward nll_loss's zero
// fill and scatter, log_softmax's backward (exponentials again) and the bias's sums: about eight
// passes over [N, n_items]; BERT4Rec scores ~420 000 masked positions against 1 683 items an
// ml-100k epoch. Fused: the GEMM, one pass forward (scale, bias, maximum, exponentials and their
// sum, the probabilities written in place) and one backward (p − onehot), then the GEMMs. Elsewhere
// (CUDA, float64) it is the libtorch composition. Both give the same values and gradients up to
// float rounding (tests/models/test_layers.cpp). The fused node has no double backward, and its
// backward runs once (it reuses the probabilities' buffer).
// On the CPU the work runs in blocks of 64 rows (64 items for the items' gradient) on the
// ThreadPool, each block's products on jit_mm_out's kernels (AVX-512 where the CPU has it, where
// OpenBLAS runs the Haswell kernels this workplace forces, on its own spinning threads): a block is
// computed the same way whatever the pool size, so results do not depend on the thread count.
#include <torch/torch.h>

namespace recbole::models::layers {

// Σ_r w_r · −log softmax(scale · h_r · itemsᵀ + bias)[targets_r]: h [N, d] float; items [n, d]
// float; bias [n] or undefined (none); targets [N] int64 in [0, n); weights [N] float or undefined
// (every w_r = 1; constants, no gradient: a row's count when repeated rows are scored once); all
// on one device → a scalar (the sum over rows; divide by N for the mean), with gradients to h,
// items and bias.
torch::Tensor item_cross_entropy(const torch::Tensor& h, const torch::Tensor& items,
                                 const torch::Tensor& bias, const torch::Tensor& targets,
                                 double scale = 1.0, const torch::Tensor& weights = {});

}  // namespace recbole::models::layers

#pragma once
// RecBole's attention weights, dropout(softmax(scores · scale + mask)), as one autograd node on
// the CPU.
//
// Why: libtorch runs them as five kernels forward (scale, mask add, softmax, the dropout mask,
// its product) and as many backward, each a pass over [B, heads, L, L] — at SASRec's 50
// positions the same size as the layer's hidden states — and its softmax over rows of 50 ran at
// ~2 ns an element here. The fused node is one pass over each row forward (exponentials from
// simd::exp) and one backward. Elsewhere (CUDA, float64, another mask shape) it is the libtorch
// composition. Both give the same values and gradients up to float rounding, and the same
// dropout draws (layers::dropout_mask with the same key): tests/models/test_layers.cpp.
#include <torch/torch.h>

namespace recbole::models::layers {

// scores: [B, H, Lq, Lk] float; mask: additive, [B, 1, Lq or 1, Lk] (attention_mask's), on the
// scores' device; p: the attention dropout, applied only in training → [B, H, Lq, Lk], with
// gradients to scores. The fused node has no double backward.
torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask,
                                double scale, double p, bool training);

}  // namespace recbole::models::layers

#pragma once
// Multi-head self-attention as RecBole's transformer computes it — the weights
// dropout(softmax(scores · scale + mask)) and the context they give — as single autograd nodes
// on the CPU.
//
// Why: libtorch runs the weights as five kernels forward (scale, mask add, softmax, the dropout
// mask, its product) and as many backward, each a pass over [B, heads, L, L] — at SASRec's 50
// positions the size of the layer's hidden states — and its softmax over rows of 50 ran at ~2 ns
// an element here; around them it copies q, k, v into [B, heads, L, d_h] and the context back,
// and its CPU bmm multiplies the 50 × 32 head matrices one tensor select at a time, at half the
// rate of plain sgemm calls. Fused, the weights are one pass over each row forward (exponentials
// from simd::exp) and one backward, and each head's products are sgemm calls on the projection's
// and the context's own memory. Elsewhere (CUDA, float64, another mask shape, a BLAS without
// cblas_sgemm) it is the libtorch composition. Both give the same values and gradients up to
// float rounding, and the same dropout draws (layers::dropout_mask with the same key):
// tests/models/test_layers.cpp. The fused nodes have no double backward.
#include <torch/torch.h>

namespace recbole::models::layers {

// dropout(softmax(scores · scale + mask)) over the last axis (RecBole's attention weights).
// scores: [B, H, Lq, Lk] float; mask: additive, [B, 1, Lq or 1, Lk] (attention_mask's), on the
// scores' device; p: the attention dropout, applied only in training → [B, H, Lq, Lk], with
// gradients to scores.
torch::Tensor attention_weights(const torch::Tensor& scores, const torch::Tensor& mask,
                                double scale, double p, bool training);

// Multi-head self-attention from its fused projection: with q | k | v = qkv's thirds, split into
// `heads` heads of d_h = d / heads columns, ctx[b, i, head h] = Σ_j A[b, h, i, j] · v[b, j, h]
// where A = attention_weights(q·kᵀ per head, mask, scale, p, training). qkv: [B, L, 3d] float;
// mask: as attention_weights' → [B, L, d] (the heads side by side), with gradients to qkv. On
// the CPU in float32, with a BLAS that exports cblas_sgemm, one node: each head's two products
// are sgemm calls on qkv's and ctx's own memory (no copies into [B, heads, L, d_h] and back).
// Elsewhere the libtorch composition around attention_weights.
torch::Tensor attention_context(const torch::Tensor& qkv, const torch::Tensor& mask, int64_t heads,
                                double scale, double p, bool training);

}  // namespace recbole::models::layers

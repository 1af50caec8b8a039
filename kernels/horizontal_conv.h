#pragma once
// Caser's horizontal convolutions (models/layers/horizontal_conv.h, its autograd node): for each
// height h, nh filters of h × d slide over the rows of a sequence's [L, d] item image, each
// followed by ReLU and a max over the positions, forward and backward. On the calling thread,
// the samples in order; no libtorch.
//
// A window of h rows is h·d contiguous floats of the image, so each output is a dot product of
// contiguous memory; four windows and four filters at a time keep their 16 partial sums in
// vector registers (AVX-512 zmm, or pairs of AVX2 ymm: GCC vector types in a
// RECBOLE_MULTIVERSION function, its multiply-adds fused). The max keeps its window, so the
// backward touches one window per filter.
//
// Layout: float32, row-major and contiguous. x: [batch, length, dim]; weights: every height's
// [filters, h_i, dim] block one after the other (height i's at Σ_{i' < i} filters·h_i'·dim);
// biases, out, arg and grad: [batch, filters · heights] per sample ([heights · filters] for
// biases), column i·filters + f for height i's filter f.
#include <cstdint>
#include <vector>

namespace recbole::kernels {

struct HorizontalConvShape {
  int64_t batch = 0, length = 0, dim = 0;  // x: [batch, length, dim], length · dim > 0
  int64_t filters = 0;                     // nh: filters per height
  std::vector<int64_t> heights;            // h_i, each in 1..length
};

// out[b, i·nh + f] = max over the windows p = 0..length − h_i of ReLU(biases[i·nh + f] + Σ_{k <
// h_i} ⟨x[b, p + k], W_if[k]⟩); arg[b, i·nh + f] = the first p that reaches the max, or −1 where
// the max is ≤ 0 (ReLU cuts it). Each window's dot product: 16 lanes over the first
// ⌊h_i·dim / 16⌋·16 floats, in index order per lane (multiply-adds fused), the lanes summed in
// a fixed tree, then the rest of the floats added one by one in order; then the bias.
void horizontal_conv_max_forward(const HorizontalConvShape& shape, const float* x,
                                 const float* weights, const float* biases, float* out,
                                 int32_t* arg);

// The gradients of Σ grad ⊙ out, from forward's arg: each output the ReLU kept passes grad to
// its window only. Writes dx [batch, length, dim], dweights (the weights' layout) and dbiases
// [heights · filters]; the samples' contributions summed in sample order, each window's as
// dW += g·x and dx += g·W element by element (multiply-adds fused), the heights and filters in
// order.
void horizontal_conv_max_backward(const HorizontalConvShape& shape, const float* x,
                                  const float* weights, const float* grad, const int32_t* arg,
                                  float* dx, float* dweights, float* dbiases);

}  // namespace recbole::kernels

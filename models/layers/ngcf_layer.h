#pragma once
// One NGCF propagation layer after its sparse product (RecBole's BiGNNLayer, then NGCF's
// activation, message dropout and row normalisation):
//   H = LeakyReLU_0.2(W1 (E + S) + b1 + W2 (S ⊙ E) + b2) ⊙ M,   out = H / max(‖H_row‖₂, 1e−12),
// with M the message-dropout mask while training (layers::dropout's masks, drawn the same way).
//
// Why fused: NGCF propagates the whole graph at every training batch, and composed from libtorch
// ops a layer is ~30 element-wise kernels over [N, d] forward and back, each a pass over memory
// plus autograd bookkeeping: most of an epoch once the sparse product was fast. On the CPU
// (float32) this runs as one autograd function: a pass that builds [E + S | S ⊙ E], one GEMM
// against [W1 | W2], one pass for activation, mask and norm; the backward is the mirror image
// (two passes and three GEMMs), the passes split by rows over the ThreadPool. Elsewhere (CUDA,
// float64) it is the composed libtorch expression. Both give the same values and gradients up
// to float rounding (tests/models/test_graph_models.cpp); the fused one has no double backward.
#include <torch/torch.h>

namespace recbole::models::layers {

// e, s: [N, d] (the layer's input and Â·e); w1, w2: [d', d]; b1, b2: [d']; all on one device;
// dropout in [0, 1] → [N, d'], with gradients to e, s, w1, b1, w2, b2.
torch::Tensor ngcf_layer(const torch::Tensor& e, const torch::Tensor& s, const torch::Tensor& w1,
                         const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
                         double dropout, bool training);

// The composed libtorch expression of the same layer on any device (what ngcf_layer runs off
// the CPU; the reference the fused function is tested against).
torch::Tensor ngcf_layer_composed(const torch::Tensor& e, const torch::Tensor& s,
                                  const torch::Tensor& w1, const torch::Tensor& b1,
                                  const torch::Tensor& w2, const torch::Tensor& b2, double dropout,
                                  bool training);

}  // namespace recbole::models::layers

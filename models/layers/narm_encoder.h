#pragma once
// NARM's two encoders over its GRU states (Li et al. 2017, as RecBole): the global one
// c_g = g_{len−1}, and the local one, an unnormalised additive attention
// c_l = Σ_{t < len} α_t g_t with α_t = v · σ(A1 g_t + A2 c_g) (A1, A2, v without biases).
//
// Why one node: composed in libtorch, A1·g, the broadcast sum, the sigmoid, the mask, the product
// with v, α ⊙ g, the sum over steps, the gather of c_g and the concatenation are each a pass over
// a [B, T, H] tensor forward and one or two backward, each with a temporary, and the three
// gradients reaching g are summed by autograd: after NARM's GRU and linear layers went to
// libxsmm, a fifth of its epoch (docs/models.md, "NARM's encoders in one node"). Here the
// forward is A1·g and A2·c_g on libxsmm (jit_gemm.h) and one pass per row over its real steps,
// keeping σ(·) for the backward; the backward is one pass per row writing g's gradient once, then
// two accumulating products. On CUDA or for float64 it is the composed libtorch expression, which
// the tests compare it with.
#include <torch/torch.h>

namespace recbole::models::layers {

// g: [B, T, H] GRU states; a1, a2: [H, H] (Linear(H, H) weights); v: [1, H] or [H] (a
// Linear(H, 1)'s weight); lengths: [B] int64 in [1, T]; on one device, floats of one dtype.
// → [B, 2H] = [c_l ; c_g], with gradients to g, a1, a2 and v (no double backward on the CPU).
torch::Tensor narm_encoder(const torch::Tensor& g, const torch::Tensor& a1, const torch::Tensor& a2,
                           const torch::Tensor& v, const torch::Tensor& lengths);

}  // namespace recbole::models::layers

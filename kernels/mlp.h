#pragma once
// The layers of a deep part (RecBole's MLPLayers with ReLU and no BatchNorm — Dropout → Linear →
// ReLU per layer — then a Linear to one logit, as DeepFM's and WideDeep's) forward and backward,
// written out: models/layers/direct_mlp.h keeps the parameters, the buffers and the dropout
// masks, and calls these a layer at a time for ContextModel's closed form, on each part of a
// batch on its own pool worker. On the calling thread.
//
// Layout: every matrix is float32 in host memory, row-major and contiguous ([rows, cols]: row i
// at i·cols); a mask is the dropout's, 0 or 1 / (1 − p) per element (layers::fill_dropout_mask).
// The products are kernels/jit_gemm.h's (libxsmm's kernels for this CPU, or libtorch's): their
// summation order is the GEMM kernel's, the same on every call of a shape. The element-wise
// passes are compiled for the CPU's vector width (kernels/simd.h); the sums over rows and
// columns below run in the order stated.
#include <cstdint>

namespace recbole::kernels {

// One hidden layer: out = ReLU(in · W_kᵀ + bias), in = x ⊙ mask (written to dropped) when mask
// is given, else x. x, mask, dropped: [n, width_in]; weight_t: W_kᵀ [width_in, width_out];
// bias: [width_out]; out: [n, width_out]. NaN passes the ReLU, as torch::relu.
void mlp_layer_forward(const float* x, const float* mask, float* dropped, const float* weight_t,
                       const float* bias, int64_t n, int64_t width_in, int64_t width_out,
                       float* out);

// The output layer: z[r] += ⟨top[r], v⟩ + c, the dot product summed over j = 0..width−1 in
// order, in float. top: [n, width] (the last hidden layer's output); v: [width].
void mlp_logit_forward(const float* top, const float* v, float c, int64_t n, int64_t width,
                       float* z);

// The output layer's backward. dz: [n] dloss/dz. dv: [width] = Σ_r dz[r] · top[r] (a product
// [1, n] · [n, width]); *dc = Σ_r dz[r] in row order; dtop: [n, width] = dz[r] · v[j], zeroed
// where top[r, j] ≤ 0 when `relu` (top is a ReLU's output: dtop is then dloss/d(its
// pre-activation)).
void mlp_logit_backward(const float* dz, const float* top, const float* v, int64_t n, int64_t width,
                        bool relu, float* dv, float* dc, float* dtop);

// A hidden layer's backward. delta: [n, width_out] dloss/d(its pre-activation); in: [n,
// width_in] its input after the dropout (mlp_layer_forward's dropped, or x); weight: W_k
// [width_out, width_in]; mask: [n, width_in] or null (no dropout); below: [n, width_in] the
// layer below's ReLU output (that is, x) or null (the first layer). Writes dweight [width_out,
// width_in] = deltaᵀ · in; dbias [width_out] = Σ_r delta[r] in row order; and dinput [n,
// width_in] = (delta · W_k) ⊙ mask, zeroed where below ≤ 0 — dloss/d(the layer below's
// pre-activation), or dloss/dx for the first layer.
void mlp_layer_backward(const float* delta, const float* in, const float* weight, const float* mask,
                        const float* below, int64_t n, int64_t width_in, int64_t width_out,
                        float* dweight, float* dbias, float* dinput);

}  // namespace recbole::kernels

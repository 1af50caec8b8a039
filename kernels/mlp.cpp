#include "kernels/mlp.h"

#include "kernels/jit_gemm.h"
#include "kernels/simd.h"

namespace recbole::kernels {

namespace {

// A [rows, cols] view of float memory for jit_mm_out (read only where it is an operand), with
// the given strides: {cols, 1} for rows in place, {1, rows} for a transposed view.
torch::Tensor mlp_matrix(const float* data, int64_t rows, int64_t cols, int64_t row_stride,
                         int64_t col_stride) {
  return torch::from_blob(const_cast<float*>(data), {rows, cols}, {row_stride, col_stride},
                          torch::kFloat32);
}

torch::Tensor mlp_rows(const float* data, int64_t rows, int64_t cols) {
  return mlp_matrix(data, rows, cols, cols, 1);
}

// The element-wise passes, compiled for the CPU's vector width; every select is written as an
// unconditional store (a branch per element mispredicts on ReLU's pattern).

// to[i] = from[i] · mask[i].
RECBOLE_MULTIVERSION void masked_copy(float* __restrict to, const float* __restrict from,
                                      const float* __restrict mask, int64_t count) {
  for (int64_t i = 0; i < count; ++i) to[i] = from[i] * mask[i];
}

// h[r] = ReLU(h[r] + bias) for n rows of `width`.
RECBOLE_MULTIVERSION void bias_relu(float* __restrict h, const float* __restrict bias, int64_t n,
                                    int64_t width) {
  for (int64_t r = 0; r < n; ++r, h += width)
    for (int64_t j = 0; j < width; ++j) {
      const float v = h[j] + bias[j];
      h[j] = v < 0.0f ? 0.0f : v;  // NaN passes, as torch::relu
    }
}

// g[r, j] = dz[r] · v[j], zero where top[r, j] ≤ 0 when `relu` (the ReLU below the output).
RECBOLE_MULTIVERSION void outer_grad(float* __restrict g, const float* __restrict top,
                                     const float* __restrict dz, const float* __restrict v,
                                     int64_t n, int64_t width, bool relu) {
  for (int64_t r = 0; r < n; ++r, g += width, top += width)
    for (int64_t j = 0; j < width; ++j) {
      const float x = dz[r] * v[j];
      g[j] = (relu && !(top[j] > 0.0f)) ? 0.0f : x;
    }
}

// db[j] = Σ_r d[r, j].
RECBOLE_MULTIVERSION void column_sums(float* __restrict db, const float* __restrict d, int64_t n,
                                      int64_t width) {
  for (int64_t j = 0; j < width; ++j) db[j] = 0.0f;
  for (int64_t r = 0; r < n; ++r, d += width)
    for (int64_t j = 0; j < width; ++j) db[j] += d[j];
}

// g[i] ·= mask[i] (mask may be null), then zero where below[i] ≤ 0 (below may be null: no ReLU).
RECBOLE_MULTIVERSION void input_grad(float* __restrict g, const float* __restrict mask,
                                     const float* __restrict below, int64_t count) {
  if (mask != nullptr)
    for (int64_t i = 0; i < count; ++i) g[i] *= mask[i];
  if (below != nullptr)
    for (int64_t i = 0; i < count; ++i) g[i] = below[i] > 0.0f ? g[i] : 0.0f;
}

}  // namespace

void mlp_layer_forward(const float* x, const float* mask, float* dropped, const float* weight_t,
                       const float* bias, int64_t n, int64_t width_in, int64_t width_out,
                       float* out) {
  const float* in = x;
  if (mask != nullptr) {
    masked_copy(dropped, x, mask, n * width_in);
    in = dropped;
  }
  jit_mm_out(mlp_rows(out, n, width_out), mlp_rows(in, n, width_in),
             mlp_rows(weight_t, width_in, width_out), /*accumulate=*/false);
  bias_relu(out, bias, n, width_out);
}

void mlp_logit_forward(const float* top, const float* v_weights, float c, int64_t n, int64_t width,
                       float* z) {
  const float* __restrict v = v_weights;
  const float* __restrict row = top;
  for (int64_t r = 0; r < n; ++r, row += width) {
    float s = 0.0f;
    for (int64_t j = 0; j < width; ++j) s += row[j] * v[j];
    z[r] += s + c;
  }
}

void mlp_logit_backward(const float* dz, const float* top, const float* v, int64_t n, int64_t width,
                        bool relu, float* dv, float* dc, float* dtop) {
  jit_mm_out(mlp_rows(dv, 1, width), mlp_rows(dz, 1, n), mlp_rows(top, n, width),
             /*accumulate=*/false);
  float sum = 0.0f;
  for (int64_t r = 0; r < n; ++r) sum += dz[r];
  *dc = sum;
  outer_grad(dtop, top, dz, v, n, width, relu);
}

void mlp_layer_backward(const float* delta, const float* in, const float* weight, const float* mask,
                        const float* below, int64_t n, int64_t width_in, int64_t width_out,
                        float* dweight, float* dbias, float* dinput) {
  // dW = δᵀ · in (δᵀ a transposed view); db = Σ_r δ[r].
  jit_mm_out(mlp_rows(dweight, width_out, width_in), mlp_matrix(delta, width_out, n, 1, width_out),
             mlp_rows(in, n, width_in), /*accumulate=*/false);
  column_sums(dbias, delta, n, width_out);
  // Into the layer's input: δ · W, times the dropout mask, times the ReLU's gradient of the
  // layer below (none below the first: that is dloss/dx).
  jit_mm_out(mlp_rows(dinput, n, width_in), mlp_rows(delta, n, width_out),
             mlp_rows(weight, width_out, width_in), /*accumulate=*/false);
  input_grad(dinput, mask, below, n * width_in);
}

}  // namespace recbole::kernels

#include "models/layers/direct_mlp.h"

#include <utility>

#include "kernels/jit_gemm.h"
#include "kernels/simd.h"
#include "models/layers/dropout.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

namespace {

// t as a [rows, cols] float32 CPU buffer, reallocated only when its shape changes.
void ensure_shape(torch::Tensor& t, int64_t rows, int64_t cols) {
  if (!t.defined() || t.size(0) != rows || t.size(1) != cols)
    t = torch::empty({rows, cols}, torch::kFloat32);
}

float* direct_floats(const torch::Tensor& t) { return t.data_ptr<float>(); }

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

DirectMLP::DirectMLP(ContextMLP mlp, torch::nn::Linear output)
    : mlp_(std::move(mlp)), output_(std::move(output)) {
  if (!supports(*mlp_)) throw Error("DirectMLP: the MLP must use relu and no BatchNorm");
  if (output_->weight.size(0) != 1 || !output_->bias.defined())
    throw Error("DirectMLP: the output layer must be a Linear to one logit, with a bias");
}

bool DirectMLP::supports(const ContextMLPImpl& mlp) {
  return mlp.activation() == "relu" && !mlp.batch_norm();
}

std::vector<torch::Tensor> DirectMLP::parameters() const {
  std::vector<torch::Tensor> out;
  for (const torch::nn::Linear& l : mlp_->linears()) {
    out.push_back(l->weight);
    out.push_back(l->bias);
  }
  out.push_back(output_->weight);
  out.push_back(output_->bias);
  return out;
}

void DirectMLP::prepare() {
  torch::NoGradGuard no_grad;
  transposed_.clear();
  for (const torch::nn::Linear& l : mlp_->linears())
    transposed_.push_back(l->weight.detach().t().contiguous());
}

void DirectMLP::forward(const torch::Tensor& x, bool training, float* z, Work& w) const {
  const auto& linears = mlp_->linears();
  const size_t layers = linears.size();
  if (transposed_.size() != layers) throw Error("DirectMLP: forward before prepare()");
  const int64_t n = x.size(0);
  w.rows = n;
  for (auto* v : {&w.in, &w.dropped, &w.masks, &w.out, &w.delta}) v->resize(layers);
  w.dropout = training && mlp_->dropout() > 0.0;
  torch::Tensor a = x;
  for (size_t k = 0; k < layers; ++k) {
    const int64_t width_in = a.size(1), width_out = transposed_[k].size(1);
    w.in[k] = a;
    if (w.dropout) {
      // The mask ContextMLP::forward's layers::dropout draws here (outside training or at
      // p = 0 it draws none, and no key).
      ensure_shape(w.masks[k], n, width_in);
      ensure_shape(w.dropped[k], n, width_in);
      fill_dropout_mask(direct_floats(w.masks[k]), n * width_in, mlp_->dropout(), training);
      masked_copy(direct_floats(w.dropped[k]), direct_floats(a), direct_floats(w.masks[k]),
                  n * width_in);
      w.in[k] = w.dropped[k];
    }
    ensure_shape(w.out[k], n, width_out);
    jit_mm_out(w.out[k], w.in[k], transposed_[k], /*accumulate=*/false);
    bias_relu(direct_floats(w.out[k]), direct_floats(linears[k]->bias), n, width_out);
    a = w.out[k];
  }
  // The output layer: one dot product per row.
  const int64_t width = a.size(1);
  const float* __restrict v = direct_floats(output_->weight);
  const float c = direct_floats(output_->bias)[0];
  const float* __restrict top = direct_floats(a);
  for (int64_t r = 0; r < n; ++r, top += width) {
    float s = 0.0f;
    for (int64_t j = 0; j < width; ++j) s += top[j] * v[j];
    z[r] += s + c;
  }
  if (layers == 0) w.in.assign(1, x);  // the output layer's input, for backward
}

void DirectMLP::backward(const float* dz, Work& w) const {
  torch::NoGradGuard no_grad;
  const auto& linears = mlp_->linears();
  const size_t layers = linears.size();
  const int64_t n = w.rows;
  const std::vector<torch::Tensor> params = parameters();
  w.grads.resize(params.size());
  for (size_t k = 0; k < params.size(); ++k)
    ensure_shape(w.grads[k], params[k].size(0), params[k].dim() > 1 ? params[k].size(1) : 1);
  const torch::Tensor& top = layers > 0 ? w.out[layers - 1] : w.in[0];
  const int64_t width = top.size(1);
  const float* __restrict v = direct_floats(output_->weight);

  // The output layer: dv = Σ_r dz[r] · top[r], dc = Σ_r dz[r].
  const torch::Tensor dz_row =
      torch::from_blob(const_cast<float*>(dz), {1, n}, torch::kFloat32);  // read only
  jit_mm_out(w.grads[2 * layers], dz_row, top, /*accumulate=*/false);
  float dc = 0.0f;
  for (int64_t r = 0; r < n; ++r) dc += dz[r];
  direct_floats(w.grads[2 * layers + 1])[0] = dc;

  // dloss/d(top) = dz ⊗ v, times ReLU's gradient (top > 0) for the last hidden layer.
  torch::Tensor& first = layers > 0 ? w.delta[layers - 1] : w.dx;
  ensure_shape(first, n, width);
  outer_grad(direct_floats(first), direct_floats(top), dz, v, n, width, layers > 0);
  for (size_t k = layers; k-- > 0;) {
    const torch::Tensor& delta = w.delta[k];  // [n, out_k]
    const int64_t width_in = w.in[k].size(1), width_out = delta.size(1);
    // dW_k = δᵀ · in_k; db_k = Σ_r δ[r].
    jit_mm_out(w.grads[2 * k], delta.t(), w.in[k], /*accumulate=*/false);
    column_sums(direct_floats(w.grads[2 * k + 1]), direct_floats(delta), n, width_out);
    // Into layer k's input: δ · W_k, times the dropout mask, times the ReLU's gradient of the
    // layer below (none below the first: that is dloss/dx).
    torch::Tensor& below = k > 0 ? w.delta[k - 1] : w.dx;
    ensure_shape(below, n, width_in);
    jit_mm_out(below, delta, linears[k]->weight.detach(), /*accumulate=*/false);
    input_grad(direct_floats(below), w.dropout ? direct_floats(w.masks[k]) : nullptr,
               k > 0 ? direct_floats(w.out[k - 1]) : nullptr, n * width_in);
  }
}

void DirectMLP::add_gradients(const Work& part) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    torch::Tensor& g = params[k].mutable_grad();
    if (!g.defined()) g = torch::zeros_like(params[k]);
    g.add_(part.grads[k].view(params[k].sizes()));
  }
}

}  // namespace recbole::models::layers

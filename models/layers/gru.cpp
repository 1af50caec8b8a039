#include "models/layers/gru.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/jit_gemm.h"
#include "kernels/simd.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models::layers {

namespace {

// Gate layout of a [rows, 3H] block, as libtorch's weights: r | z | n.

// One forward step for rows [0, b): from gi = x·W_ihᵀ and gh = h·W_hhᵀ (both [b, 3H]),
//   r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + r ⊙ gh_n), h' = n + z ⊙ (h − n);
// gates holds gi on entry and [r | z | n] on return (in place, saving a [T, B, 3H] buffer a
// part); ghn ← gh_n (both read by the backward), h_out ← h'.
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void step_forward(
    float* gates, const float* __restrict gh, const float* __restrict h, float* __restrict ghn,
    float* __restrict h_out, int64_t b, int64_t hidden) {
  const int64_t w = 3 * hidden;
  for (int64_t i = 0; i < b; ++i) {
    const float* ghr = gh + i * w;
    const float* hr = h + i * hidden;
    float* g = gates + i * w;
    float* gn = ghn + i * hidden;
    float* o = h_out + i * hidden;
    for (int64_t j = 0; j < 2 * hidden; ++j)
      g[j] = 0.5f * (1.f + simd::tanh(0.5f * (g[j] + ghr[j])));
    for (int64_t j = 0; j < hidden; ++j) {
      const float r = g[j], z = g[hidden + j], hn = ghr[2 * hidden + j];
      const float n = simd::tanh(g[2 * hidden + j] + r * hn);
      g[2 * hidden + j] = n;
      gn[j] = hn;
      o[j] = n + z * (hr[j] - n);
    }
  }
}

// One backward step for rows [0, b): with g = dh + dy (the gradient reaching h'),
//   dn̂ = g (1 − z)(1 − n²), dẑ = g (h − n) z (1 − z), dr̂ = dn̂ ⊙ gh_n ⊙ r (1 − r)
// (the gradients at the gates' arguments); gates ← dgi = [dr̂ | dẑ | dn̂] and ghn ← dn̂ ⊙ r (the
// n part of dgh = [dr̂ | dẑ | dn̂ ⊙ r]), in place; dh_direct ← g ⊙ z (the part of dh that skips
// W_hh), and dgh_step ← dgh for the step's GEMM.
RECBOLE_MULTIVERSION void step_backward(const float* __restrict dy, const float* __restrict dh,
                                        float* gates, float* ghn, const float* __restrict h,
                                        float* __restrict dgh_step, float* __restrict dh_direct,
                                        int64_t b, int64_t hidden) {
  const int64_t w = 3 * hidden;
  for (int64_t i = 0; i < b; ++i) {
    const float* dyr = dy + i * hidden;
    const float* dhr = dh + i * hidden;
    float* g = gates + i * w;
    float* gn = ghn + i * hidden;
    const float* hr = h + i * hidden;
    float* dg = dgh_step + i * w;
    float* dd = dh_direct + i * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const float r = g[j], z = g[hidden + j], n = g[2 * hidden + j];
      const float grad = dhr[j] + dyr[j];
      const float dn = grad * (1.f - z) * (1.f - n * n);
      const float dz = grad * (hr[j] - n) * z * (1.f - z);
      const float dr = dn * gn[j] * r * (1.f - r);
      g[j] = dr;
      g[hidden + j] = dz;
      g[2 * hidden + j] = dn;
      gn[j] = dn * r;
      dg[j] = dr;
      dg[hidden + j] = dz;
      dg[2 * hidden + j] = dn * r;
      dd[j] = grad * z;
    }
  }
}

float* floats(const torch::Tensor& t) { return t.data_ptr<float>(); }

// One GRU layer without biases. Time-major inside: step t's rows are contiguous. The backward
// reuses the saved buffers in place, so it runs once: a second call throws (no retain_graph).
struct FusedGruLayer : public torch::autograd::Function<FusedGruLayer> {
  // x: [B, T, I]; w_ih: [3H, I]; w_hh: [3H, H] → [B, T, H].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w_ih, const torch::Tensor& w_hh) {
    const int64_t b = x.size(0), steps = x.size(1), in = x.size(2), hidden = w_hh.size(1);
    const torch::Tensor xt = x.transpose(0, 1).contiguous();  // [T, B, I]
    // x·W_ihᵀ for every step at once; then each step turns its block into [r | z | n].
    const torch::Tensor gates = torch::empty({steps, b, 3 * hidden}, x.options());
    kernels::jit_mm_out(gates.view({steps * b, 3 * hidden}), xt.view({steps * b, in}),
                        w_ih.t().contiguous(),
                        /*accumulate=*/false);
    const torch::Tensor hs = torch::empty({steps + 1, b, hidden}, x.options());  // h_{t−1}
    hs[0].zero_();
    const torch::Tensor ghn = torch::empty({steps, b, hidden}, x.options());
    torch::Tensor gh = torch::empty({b, 3 * hidden}, x.options());
    const torch::Tensor w_hh_t = w_hh.t().contiguous();  // read as it lies by jit_mm_out
    for (int64_t t = 0; t < steps; ++t) {
      kernels::jit_mm_out(gh, hs[t], w_hh_t, /*accumulate=*/false);
      step_forward(floats(gates[t]), floats(gh), floats(hs[t]), floats(ghn[t]), floats(hs[t + 1]),
                   b, hidden);
    }
    ctx->save_for_backward({w_ih, w_hh});
    ctx->saved_data["xt"] = xt;
    ctx->saved_data["hs"] = hs;
    ctx->saved_data["gates"] = gates;
    ctx->saved_data["ghn"] = ghn;
    // A copy, not a view of hs: hs is saved for the backward and must not be an output's base.
    return hs.narrow(0, 1, steps).transpose(0, 1).contiguous();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (ctx->saved_data.count("used"))
      throw std::logic_error("the fused GRU's backward runs once (its buffers are reused)");
    ctx->saved_data["used"] = true;
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &w_ih = saved[0], &w_hh = saved[1];
    const torch::Tensor xt = ctx->saved_data["xt"].toTensor();
    const torch::Tensor hs = ctx->saved_data["hs"].toTensor();
    const torch::Tensor dgi = ctx->saved_data["gates"].toTensor();  // gates, until overwritten
    const torch::Tensor dghn = ctx->saved_data["ghn"].toTensor();   // gh_n, until overwritten
    const int64_t steps = xt.size(0), b = xt.size(1), in = xt.size(2), hidden = w_hh.size(1);
    const torch::Tensor dy = grads[0].transpose(0, 1).contiguous();  // [T, B, H]
    const torch::Tensor dgh = torch::empty({b, 3 * hidden}, xt.options());
    torch::Tensor dh = torch::zeros({b, hidden}, xt.options());
    torch::Tensor next = torch::empty({b, hidden}, xt.options());
    const torch::Tensor w_hh_rows = w_hh.contiguous();
    for (int64_t t = steps - 1; t >= 0; --t) {
      step_backward(floats(dy[t]), floats(dh), floats(dgi[t]), floats(dghn[t]), floats(hs[t]),
                    floats(dgh), floats(next), b, hidden);
      kernels::jit_mm_out(next, dgh, w_hh_rows,
                          /*accumulate=*/true);  // dh_{t−1} = g ⊙ z + dgh·W_hh
      std::swap(dh, next);
    }
    // The weight gradients over every step at once: dW_hh = dghᵀ·h_{t−1}, whose r and z rows
    // are dgi's; dW_ih = dgiᵀ·x; dx = dgi·W_ih.
    const torch::Tensor dgi_rows = dgi.view({steps * b, 3 * hidden});
    const torch::Tensor h_prev = hs.narrow(0, 0, steps).view({steps * b, hidden});
    const torch::Tensor dw_hh = torch::empty_like(w_hh);
    torch::Tensor dw_rz = dw_hh.narrow(0, 0, 2 * hidden),
                  dw_n = dw_hh.narrow(0, 2 * hidden, hidden);
    kernels::jit_mm_out(dw_rz, dgi_rows.narrow(1, 0, 2 * hidden).t(), h_prev, /*accumulate=*/false);
    kernels::jit_mm_out(dw_n, dghn.view({steps * b, hidden}).t(), h_prev, /*accumulate=*/false);
    const torch::Tensor dw_ih = torch::empty_like(w_ih);
    kernels::jit_mm_out(dw_ih, dgi_rows.t(), xt.view({steps * b, in}), /*accumulate=*/false);
    const torch::Tensor dx = torch::empty({steps, b, in}, xt.options());
    kernels::jit_mm_out(dx.view({steps * b, in}), dgi_rows, w_ih.contiguous(),
                        /*accumulate=*/false);
    return {dx.transpose(0, 1), dw_ih, dw_hh};
  }
};

bool fusable(const torch::nn::GRU& gru, const torch::Tensor& x) {
  const auto& o = gru->options;
  if (o.bias() || !o.batch_first() || o.bidirectional() || o.dropout() > 0.0 || x.dim() != 3)
    return false;
  if (!fast_paths_enabled() || !x.is_cpu() || x.scalar_type() != torch::kFloat32) return false;
  for (const auto& p : gru->parameters())
    if (!p.is_cpu() || p.scalar_type() != torch::kFloat32) return false;
  return x.size(2) == o.input_size();
}

}  // namespace

torch::Tensor gru_outputs(torch::nn::GRU& gru, const torch::Tensor& x) {
  if (!fusable(gru, x)) return std::get<0>(gru->forward(x));
  const auto params = gru->named_parameters();
  torch::Tensor out = x;
  for (int64_t l = 0; l < gru->options.num_layers(); ++l) {
    const std::string k = std::to_string(l);
    out = FusedGruLayer::apply(out, params["weight_ih_l" + k], params["weight_hh_l" + k]);
  }
  return out;
}

}  // namespace recbole::models::layers

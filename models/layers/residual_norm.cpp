#include "models/layers/residual_norm.h"

#include <cmath>
#include <cstdint>

#include "kernels/simd.h"
#include "models/layers/dropout.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models::layers {

namespace {

// Per row r of n rows of d: z = y·m + x (m = 1 when drop is null), xhat = (z − mean) · rstd with
// rstd = 1/√(var + eps) (biased variance, as layer_norm), out = xhat·w + b. Keeps xhat and rstd
// for the backward. The sums are simd::sum and simd::dot: a single running float stays scalar.
RECBOLE_MULTIVERSION void forward_rows(const float* __restrict y, const float* __restrict x,
                                       const float* __restrict drop, const float* __restrict w,
                                       const float* __restrict b, float eps, int64_t n, int64_t d,
                                       float* __restrict xhat, float* __restrict rstd,
                                       float* __restrict out) {
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t r = 0; r < n; ++r) {
    const float* yr = y + r * d;
    const float* xr = x + r * d;
    float* z = xhat + r * d;
    if (drop != nullptr) {
      const float* mr = drop + r * d;
      for (int64_t j = 0; j < d; ++j) z[j] = yr[j] * mr[j] + xr[j];
    } else {
      for (int64_t j = 0; j < d; ++j) z[j] = yr[j] + xr[j];
    }
    const float mean = simd::sum(z, d) * inv_d;
    for (int64_t j = 0; j < d; ++j) z[j] -= mean;
    const float s = 1.0f / std::sqrt(simd::dot(z, z, d) * inv_d + eps);
    rstd[r] = s;
    float* o = out + r * d;
    for (int64_t j = 0; j < d; ++j) {
      z[j] *= s;
      o[j] = z[j] * w[j] + b[j];
    }
  }
}

// dz = rstd · (g·w − mean(g·w) − xhat · mean(g·w·xhat)); dx = dz, dy = dz·m (dz when drop is
// null); dw += g·xhat, db += g (accumulated over the rows).
RECBOLE_MULTIVERSION void backward_rows(const float* __restrict g, const float* __restrict xhat,
                                        const float* __restrict rstd, const float* __restrict drop,
                                        const float* __restrict w, int64_t n, int64_t d,
                                        float* __restrict dx, float* __restrict dy,
                                        float* __restrict dw, float* __restrict db) {
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t r = 0; r < n; ++r) {
    const float* gr = g + r * d;
    const float* hr = xhat + r * d;
    float* dxr = dx + r * d;
    for (int64_t j = 0; j < d; ++j) {
      dxr[j] = gr[j] * w[j];  // g·w, until dz replaces it below
      dw[j] += gr[j] * hr[j];
      db[j] += gr[j];
    }
    const float c1 = simd::sum(dxr, d) * inv_d;
    const float c2 = simd::dot(dxr, hr, d) * inv_d;
    const float s = rstd[r];
    for (int64_t j = 0; j < d; ++j) dxr[j] = s * (dxr[j] - c1 - hr[j] * c2);
    float* dyr = dy + r * d;
    if (drop != nullptr) {
      const float* mr = drop + r * d;
      for (int64_t j = 0; j < d; ++j) dyr[j] = dxr[j] * mr[j];
    } else {
      for (int64_t j = 0; j < d; ++j) dyr[j] = dxr[j];
    }
  }
}

struct FusedResidualNorm : public torch::autograd::Function<FusedResidualNorm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y,
                               const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, double eps, double p, bool training) {
    const int64_t d = x.size(-1);
    const int64_t n = x.numel() / d;
    const torch::Tensor yc = y.contiguous(), xc = x.contiguous();
    const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
    const torch::Tensor drop = dropout_mask(y.sizes(), p, training);  // undefined: none dropped
    const torch::Tensor xhat = torch::empty_like(xc);
    const torch::Tensor rstd = torch::empty({n}, xc.options());
    const torch::Tensor out = torch::empty_like(xc);
    forward_rows(yc.data_ptr<float>(), xc.data_ptr<float>(),
                 drop.defined() ? drop.data_ptr<float>() : nullptr, w.data_ptr<float>(),
                 b.data_ptr<float>(), static_cast<float>(eps), n, d, xhat.data_ptr<float>(),
                 rstd.data_ptr<float>(), out.data_ptr<float>());
    ctx->save_for_backward({xhat, rstd, w});
    ctx->saved_data["drop"] = drop;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& xhat = saved[0];
    const torch::Tensor& rstd = saved[1];
    const torch::Tensor& w = saved[2];
    const torch::Tensor drop = ctx->saved_data["drop"].toTensor();
    const torch::Tensor g = grads[0].contiguous();
    const int64_t d = xhat.size(-1);
    const int64_t n = xhat.numel() / d;
    const torch::Tensor dx = torch::empty_like(xhat);
    // Two tensors even without dropout: autograd may accumulate into either in place.
    const torch::Tensor dy = torch::empty_like(xhat);
    const torch::Tensor dw = torch::zeros_like(w);
    const torch::Tensor db = torch::zeros_like(w);
    backward_rows(g.data_ptr<float>(), xhat.data_ptr<float>(), rstd.data_ptr<float>(),
                  drop.defined() ? drop.data_ptr<float>() : nullptr, w.data_ptr<float>(), n, d,
                  dx.data_ptr<float>(), dy.data_ptr<float>(), dw.data_ptr<float>(),
                  db.data_ptr<float>());
    return {dy, dx, dw, db, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor residual_norm(const torch::Tensor& y, const torch::Tensor& x,
                            const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                            double p, bool training) {
  const bool fused =
      fast_paths_enabled() && x.is_cpu() && y.is_cpu() && weight.is_cpu() && bias.is_cpu() &&
      x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32 &&
      weight.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32 &&
      y.sizes() == x.sizes() && x.dim() >= 1 && weight.dim() == 1 &&
      bias.sizes() == weight.sizes() && x.size(-1) == weight.size(0);
  if (!fused)
    return torch::layer_norm(layers::dropout(y, p, training) + x, {weight.size(0)}, weight, bias,
                             eps);
  return FusedResidualNorm::apply(y, x, weight, bias, eps, p, training);
}

}  // namespace recbole::models::layers

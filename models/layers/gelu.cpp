#include "models/layers/gelu.h"

#include <cstdint>

#include "kernels/simd.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models::layers {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void gelu_forward(const float* __restrict x,
                                                                float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + simd::erf(x[i] * kInvSqrt2));
}

// dx = dy · (Φ(x) + x·φ(x)), φ(x) = e^{−x²/2} / √(2π).
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void gelu_backward(const float* __restrict dy,
                                                                 const float* __restrict x,
                                                                 float* __restrict dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float cdf = 0.5f * (1.0f + simd::erf(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * simd::exp(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

struct FusedGelu : public torch::autograd::Function<FusedGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor xc = x.contiguous();
    const torch::Tensor y = torch::empty_like(xc);
    gelu_forward(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel());
    ctx->save_for_backward({xc});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor dy = grads[0].contiguous();
    const torch::Tensor dx = torch::empty_like(x);
    gelu_backward(dy.data_ptr<float>(), x.data_ptr<float>(), dx.data_ptr<float>(), x.numel());
    return {dx};
  }
};

}  // namespace

torch::Tensor gelu(const torch::Tensor& x) {
  if (!fast_paths_enabled() || !x.is_cpu() || x.scalar_type() != torch::kFloat32)
    return torch::gelu(x);
  return FusedGelu::apply(x);
}

}  // namespace recbole::models::layers

#include "models/layers/narm_encoder.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/jit_gemm.h"
#include "kernels/simd.h"
#include "models/layers/sequence.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models::layers {

namespace {

// One row's local encoder over its n real steps, from q_t = A1 g_t and k = A2 c_g:
// s_t = σ(q_t + k) (kept for the backward; ½(1 + tanh(x/2)) as the fused GRU), α_t = v · s_t,
// c = Σ_t α_t g_t.
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void local_forward(
    const float* __restrict g, const float* __restrict q, const float* __restrict k,
    const float* __restrict v, float* __restrict s, float* __restrict alpha, float* __restrict c,
    int64_t n, int64_t hidden) {
  for (int64_t j = 0; j < hidden; ++j) c[j] = 0.f;
  for (int64_t t = 0; t < n; ++t) {
    const float* qt = q + t * hidden;
    const float* gt = g + t * hidden;
    float* st = s + t * hidden;
    for (int64_t j = 0; j < hidden; ++j) st[j] = 0.5f * (1.f + simd::tanh(0.5f * (qt[j] + k[j])));
    const float a = simd::dot(st, v, hidden);
    alpha[t] = a;
    for (int64_t j = 0; j < hidden; ++j) c[j] += a * gt[j];
  }
}

// One row's backward of the local encoder over its n real steps, from dc: dα_t = dc · g_t,
// dg_t = α_t dc, dq_t = dα_t v ⊙ s_t (1 − s_t), dk = Σ_t dq_t; dv += Σ_t dα_t s_t (across
// rows). Steps n..T−1 of dg and dq are the caller's.
RECBOLE_MULTIVERSION void local_backward(const float* __restrict dc, const float* __restrict g,
                                         const float* __restrict s, const float* __restrict alpha,
                                         const float* __restrict v, float* __restrict dg,
                                         float* __restrict dq, float* __restrict dk,
                                         float* __restrict dv, int64_t n, int64_t hidden) {
  for (int64_t j = 0; j < hidden; ++j) dk[j] = 0.f;
  for (int64_t t = 0; t < n; ++t) {
    const float* gt = g + t * hidden;
    const float* st = s + t * hidden;
    float* dgt = dg + t * hidden;
    float* dqt = dq + t * hidden;
    const float da = simd::dot(dc, gt, hidden);
    const float a = alpha[t];
    for (int64_t j = 0; j < hidden; ++j) {
      const float sj = st[j];
      const float d = da * v[j] * sj * (1.f - sj);
      dgt[j] = a * dc[j];
      dqt[j] = d;
      dk[j] += d;
      dv[j] += da * sj;
    }
  }
}

float* ptr(const torch::Tensor& t) { return t.data_ptr<float>(); }

struct FusedNarmEncoder : public torch::autograd::Function<FusedNarmEncoder> {
  // g: [B, T, H]; a1, a2: [H, H]; v: [H]; lengths: [B] int64 in [1, T] → [B, 2H].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& g,
                               const torch::Tensor& a1, const torch::Tensor& a2,
                               const torch::Tensor& v, const torch::Tensor& lengths) {
    const int64_t b = g.size(0), steps = g.size(1), hidden = g.size(2), row = steps * hidden;
    const torch::Tensor gc = g.contiguous(), vc = v.contiguous();
    const int64_t* len = lengths.data_ptr<int64_t>();
    const torch::Tensor out = torch::empty({b, 2 * hidden}, g.options());
    const torch::Tensor c_g = torch::empty({b, hidden}, g.options());
    for (int64_t i = 0; i < b; ++i)
      std::memcpy(ptr(c_g) + i * hidden, ptr(gc) + i * row + (len[i] - 1) * hidden,
                  static_cast<size_t>(hidden) * sizeof(float));
    out.narrow(1, hidden, hidden).copy_(c_g);
    const torch::Tensor q = torch::empty({b, steps, hidden}, g.options());
    kernels::jit_mm_out(q.view({b * steps, hidden}), gc.view({b * steps, hidden}),
                        a1.t().contiguous(),
                        /*accumulate=*/false);
    const torch::Tensor k = torch::empty({b, hidden}, g.options());
    kernels::jit_mm_out(k, c_g, a2.t().contiguous(), /*accumulate=*/false);
    const torch::Tensor s = torch::empty({b, steps, hidden}, g.options());  // past len: unset
    const torch::Tensor alpha = torch::empty({b, steps}, g.options());
    for (int64_t i = 0; i < b; ++i)
      local_forward(ptr(gc) + i * row, ptr(q) + i * row, ptr(k) + i * hidden, ptr(vc),
                    ptr(s) + i * row, ptr(alpha) + i * steps, ptr(out) + i * 2 * hidden, len[i],
                    hidden);
    ctx->save_for_backward({gc, a1, a2, vc});
    ctx->saved_data["c_g"] = c_g;
    ctx->saved_data["s"] = s;
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["lengths"] = lengths;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &g = saved[0], &a1 = saved[1], &a2 = saved[2], &v = saved[3];
    const torch::Tensor c_g = ctx->saved_data["c_g"].toTensor();
    const torch::Tensor s = ctx->saved_data["s"].toTensor();
    const torch::Tensor alpha = ctx->saved_data["alpha"].toTensor();
    const torch::Tensor lengths = ctx->saved_data["lengths"].toTensor();
    const int64_t b = g.size(0), steps = g.size(1), hidden = g.size(2), row = steps * hidden;
    const int64_t* len = lengths.data_ptr<int64_t>();
    const torch::Tensor dout = grads[0].contiguous();  // [B, 2H] = [dc_l ; dc_g]
    const torch::Tensor dg = torch::empty_like(g), dq = torch::empty_like(g);
    const torch::Tensor dk = torch::empty({b, hidden}, g.options());
    const torch::Tensor dv = torch::zeros_like(v);
    for (int64_t i = 0; i < b; ++i) {
      local_backward(ptr(dout) + i * 2 * hidden, ptr(g) + i * row, ptr(s) + i * row,
                     ptr(alpha) + i * steps, ptr(v), ptr(dg) + i * row, ptr(dq) + i * row,
                     ptr(dk) + i * hidden, ptr(dv), len[i], hidden);
      const size_t tail = static_cast<size_t>((steps - len[i]) * hidden) * sizeof(float);
      std::memset(ptr(dg) + i * row + len[i] * hidden, 0, tail);
      std::memset(ptr(dq) + i * row + len[i] * hidden, 0, tail);
    }
    // c_g's gradient: its own plus k's through A2, added to g at each row's last step.
    const torch::Tensor dc_g = dout.narrow(1, hidden, hidden).contiguous();
    kernels::jit_mm_out(dc_g, dk, a2.contiguous(), /*accumulate=*/true);
    for (int64_t i = 0; i < b; ++i) {
      float* dst = ptr(dg) + i * row + (len[i] - 1) * hidden;
      const float* src = ptr(dc_g) + i * hidden;
      for (int64_t j = 0; j < hidden; ++j) dst[j] += src[j];
    }
    const torch::Tensor dq_rows = dq.view({b * steps, hidden});
    kernels::jit_mm_out(dg.view({b * steps, hidden}), dq_rows, a1.contiguous(),
                        /*accumulate=*/true);
    const torch::Tensor da1 = torch::empty_like(a1), da2 = torch::empty_like(a2);
    kernels::jit_mm_out(da1, dq_rows.t(), g.view({b * steps, hidden}), /*accumulate=*/false);
    kernels::jit_mm_out(da2, dk.t(), c_g, /*accumulate=*/false);
    return {dg, da1, da2, dv, torch::Tensor()};
  }
};

// The same encoders composed of libtorch ops, as RecBole writes them (CUDA, float64).
torch::Tensor narm_composed(const torch::Tensor& g, const torch::Tensor& a1,
                            const torch::Tensor& a2, const torch::Tensor& v,
                            const torch::Tensor& lengths) {
  const torch::Tensor c_g = gather_last(g, lengths);
  const torch::Tensor mask =
      (torch::arange(g.size(1), lengths.options()).unsqueeze(0) < lengths.unsqueeze(1))
          .unsqueeze(2)
          .to(g.scalar_type());  // [B, T, 1]
  const torch::Tensor alpha = torch::matmul(
      mask * torch::sigmoid(torch::linear(g, a1) + torch::linear(c_g, a2).unsqueeze(1)),
      v.reshape({-1, 1}));  // [B, T, 1]
  return torch::cat({(alpha * g).sum(1), c_g}, 1);
}

}  // namespace

torch::Tensor narm_encoder(const torch::Tensor& g, const torch::Tensor& a1, const torch::Tensor& a2,
                           const torch::Tensor& v, const torch::Tensor& lengths) {
  const int64_t h = g.dim() == 3 ? g.size(2) : -1;
  if (h < 0 || a1.dim() != 2 || a1.size(0) != h || a1.size(1) != h || a2.sizes() != a1.sizes() ||
      v.numel() != h || lengths.dim() != 1 || lengths.size(0) != g.size(0))
    throw std::invalid_argument(
        "narm_encoder: expected g [B, T, H], a1 and a2 [H, H], v [H] and lengths [B]; got g " +
        std::to_string(g.dim()) + "-d, a1 " + std::to_string(a1.dim()) + "-d, v of " +
        std::to_string(v.numel()) + ", lengths " + std::to_string(lengths.dim()) + "-d");
  bool fusable = fast_paths_enabled() && lengths.is_cpu();
  for (const auto* t : {&g, &a1, &a2, &v})
    fusable = fusable && t->is_cpu() && t->scalar_type() == torch::kFloat32;
  if (!fusable) return narm_composed(g, a1, a2, v, lengths);
  const torch::Tensor len = lengths.to(torch::kLong).contiguous();
  const int64_t low = len.numel() ? len.min().item<int64_t>() : 1;
  const int64_t high = len.numel() ? len.max().item<int64_t>() : 1;
  if (low < 1 || high > g.size(1))
    throw std::invalid_argument("narm_encoder: lengths must lie in [1, " +
                                std::to_string(g.size(1)) + "], got [" + std::to_string(low) +
                                ", " + std::to_string(high) + "]");
  return FusedNarmEncoder::apply(g, a1, a2, v.reshape({-1}), len);
}

}  // namespace recbole::models::layers

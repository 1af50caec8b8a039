#include "models/layers/ngcf_layer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/simd.h"
#include "models/layers/dropout.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

constexpr float kSlope = 0.2f;         // RecBole's LeakyReLU negative slope for NGCF
constexpr float kNormEps = 1e-12f;     // F.normalize's default eps
constexpr int64_t kRowsPerTask = 256;  // ~16k elements a task: the pool's dispatch is µs

// x[r] = [e[r] + s[r] | s[r] ⊙ e[r]] for rows [first, last): x is [N, 2d].
RECBOLE_MULTIVERSION void build_inputs(const float* __restrict e, const float* __restrict s,
                                       float* __restrict x, int64_t d, int64_t first,
                                       int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const float* er = e + r * d;
    const float* sr = s + r * d;
    float* xr = x + r * 2 * d;
    for (int64_t j = 0; j < d; ++j) {
      xr[j] = er[j] + sr[j];
      xr[d + j] = sr[j] * er[j];
    }
  }
}

// out[r] = t / max(‖t‖, eps) with t = LeakyReLU(h[r]) ⊙ mask[r] (mask nullptr: none);
// norms[r] = ‖t‖. (Without RECBOLE_NO_TRAPPING_MATH GCC keeps LeakyReLU's select as a branch.)
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void activate_rows(const float* __restrict h,
                                                                 const float* __restrict mask,
                                                                 float* __restrict out,
                                                                 float* __restrict norms, int64_t d,
                                                                 int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const float* hr = h + r * d;
    float* o = out + r * d;
    for (int64_t j = 0; j < d; ++j) o[j] = hr[j] > 0.f ? hr[j] : kSlope * hr[j];
    if (mask != nullptr) {
      const float* m = mask + r * d;
      for (int64_t j = 0; j < d; ++j) o[j] *= m[j];
    }
    const float norm = std::sqrt(simd::dot(o, o, d));
    norms[r] = norm;
    const float denom = norm > kNormEps ? norm : kNormEps;  // a select: see above
    for (int64_t j = 0; j < d; ++j) o[j] /= denom;
  }
}

// The gradient at h from the gradient g at out: through the norm, (g − y (y·g)) / ‖t‖ (g / eps
// where the norm was clamped), then the mask and LeakyReLU's slope. LeakyReLU's slope is read
// from the sign of y, which is that of h wherever the mask keeps an element (h = 0 takes the
// negative slope, as libtorch's backward does).
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void activation_grad(
    const float* __restrict g, const float* __restrict y, const float* __restrict norms,
    const float* __restrict mask, float* __restrict dh, int64_t d, int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const float* gr = g + r * d;
    const float* yr = y + r * d;
    float* o = dh + r * d;
    if (norms[r] > kNormEps) {
      const float dot = simd::dot(yr, gr, d);
      const float norm = norms[r];
      for (int64_t j = 0; j < d; ++j) o[j] = (gr[j] - yr[j] * dot) / norm;
    } else {
      for (int64_t j = 0; j < d; ++j) o[j] = gr[j] / kNormEps;
    }
    for (int64_t j = 0; j < d; ++j) o[j] *= yr[j] > 0.f ? 1.f : kSlope;
    if (mask != nullptr) {
      const float* m = mask + r * d;
      for (int64_t j = 0; j < d; ++j) o[j] *= m[j];
    }
  }
}

// From dx = [d(E + S) | d(S ⊙ E)]: de = dx1 + dx2 ⊙ s, ds = dx1 + dx2 ⊙ e.
RECBOLE_MULTIVERSION void input_grads(const float* __restrict dx, const float* __restrict e,
                                      const float* __restrict s, float* __restrict de,
                                      float* __restrict ds, int64_t d, int64_t first,
                                      int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const float* d1 = dx + r * 2 * d;
    const float* d2 = d1 + d;
    const float* er = e + r * d;
    const float* sr = s + r * d;
    float* der = de + r * d;
    float* dsr = ds + r * d;
    for (int64_t j = 0; j < d; ++j) {
      der[j] = d1[j] + d2[j] * sr[j];
      dsr[j] = d1[j] + d2[j] * er[j];
    }
  }
}

// fn(first, last) over row blocks of [0, rows) on the ThreadPool.
template <typename Fn>
void for_row_blocks(int64_t rows, const Fn& fn) {
  parallel_for_blocks(rows, kRowsPerTask,
                      [&](int64_t, int64_t first, int64_t last) { fn(first, last); });
}

float* floats(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

// The dropout mask travels as a plain argument, not a tensor input: libtorch's Function::apply
// rejects an undefined tensor input (no mask), and the mask takes no gradient.
struct Mask {
  torch::Tensor values;  // [N, d'] float32, or undefined
};

struct FusedNgcfLayer : public torch::autograd::Function<FusedNgcfLayer> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& e_in,
                               const torch::Tensor& s_in, const torch::Tensor& w1,
                               const torch::Tensor& b1, const torch::Tensor& w2,
                               const torch::Tensor& b2, const Mask& mask) {
    const torch::Tensor e = e_in.contiguous(), s = s_in.contiguous();
    const int64_t n = e.size(0), d = e.size(1), out_d = w1.size(0);
    const torch::Tensor x = torch::empty({n, 2 * d}, e.options());
    for_row_blocks(
        n, [&](int64_t a, int64_t b) { build_inputs(floats(e), floats(s), floats(x), d, a, b); });
    const torch::Tensor w = torch::cat({w1, w2}, 1);  // [d', 2d]
    const torch::Tensor h = torch::addmm(b1 + b2, x, w.t());
    const torch::Tensor out = torch::empty({n, out_d}, e.options());
    const torch::Tensor norms = torch::empty({n}, e.options());
    const torch::Tensor m = mask.values.defined() ? mask.values.contiguous() : mask.values;
    for_row_blocks(n, [&](int64_t a, int64_t b) {
      activate_rows(floats(h), floats(m), floats(out), floats(norms), out_d, a, b);
    });
    ctx->save_for_backward({e, s, out});
    ctx->saved_data["x"] = x;
    ctx->saved_data["w"] = w;
    ctx->saved_data["norms"] = norms;
    ctx->saved_data["mask"] = m;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &e = saved[0], &s = saved[1], &y = saved[2];
    const torch::Tensor x = ctx->saved_data["x"].toTensor();
    const torch::Tensor w = ctx->saved_data["w"].toTensor();
    const torch::Tensor norms = ctx->saved_data["norms"].toTensor();
    const torch::Tensor mask = ctx->saved_data["mask"].toTensor();
    const torch::Tensor g = grads[0].contiguous();
    const int64_t n = e.size(0), d = e.size(1), out_d = y.size(1);

    const torch::Tensor dh = torch::empty({n, out_d}, e.options());
    for_row_blocks(n, [&](int64_t a, int64_t b) {
      activation_grad(floats(g), floats(y), floats(norms), floats(mask), floats(dh), out_d, a, b);
    });
    const torch::Tensor dx = dh.mm(w);      // [N, 2d]
    const torch::Tensor dw = dh.t().mm(x);  // [d', 2d]
    const torch::Tensor db = dh.sum(0);     // [d']
    const torch::Tensor de = torch::empty_like(e), ds = torch::empty_like(s);
    for_row_blocks(n, [&](int64_t a, int64_t b) {
      input_grads(floats(dx), floats(e), floats(s), floats(de), floats(ds), d, a, b);
    });
    // The two biases get their own tensors: a gradient tensor may become the parameter's .grad.
    return {de, ds, dw.narrow(1, 0, d), db, dw.narrow(1, d, d), db.clone(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ngcf_layer_composed(const torch::Tensor& e, const torch::Tensor& s,
                                  const torch::Tensor& w1, const torch::Tensor& b1,
                                  const torch::Tensor& w2, const torch::Tensor& b2, double dropout,
                                  bool training) {
  namespace F = torch::nn::functional;
  torch::Tensor h = F::linear(e + s, w1, b1) + F::linear(s * e, w2, b2);
  h = F::leaky_relu(h, F::LeakyReLUFuncOptions().negative_slope(kSlope));
  h = layers::dropout(h, dropout, training);
  return F::normalize(h, F::NormalizeFuncOptions().p(2).dim(1).eps(kNormEps));
}

torch::Tensor ngcf_layer(const torch::Tensor& e, const torch::Tensor& s, const torch::Tensor& w1,
                         const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
                         double dropout, bool training) {
  // The fused kernels read raw CPU float32 memory, so anything else — another device or dtype,
  // mismatched shapes — takes the composed path, where libtorch reports the mismatch.
  bool fused = fast_paths_enabled() && e.dim() == 2 && s.sizes() == e.sizes() && w1.dim() == 2 &&
               w1.size(1) == e.size(1) && w2.sizes() == w1.sizes() && b1.dim() == 1 &&
               b1.size(0) == w1.size(0) && b2.sizes() == b1.sizes();
  for (const torch::Tensor* t : {&e, &s, &w1, &b1, &w2, &b2})
    fused = fused && t->is_cpu() && t->scalar_type() == torch::kFloat32;
  if (!fused) return ngcf_layer_composed(e, s, w1, b1, w2, b2, dropout, training);
  const torch::Tensor mask = dropout_mask({e.size(0), w1.size(0)}, dropout, training);
  return FusedNgcfLayer::apply(e, s, w1, b1, w2, b2, Mask{mask});
}

}  // namespace recbole::models::layers

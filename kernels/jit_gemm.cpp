#include "kernels/jit_gemm.h"
#include "recbole/runtime/fast_path.h"

#include <vector>

#ifdef RECBOLE_WITH_LIBXSMM
#include <libxsmm.h>
#endif

namespace recbole::kernels {

namespace {

#ifdef RECBOLE_WITH_LIBXSMM
bool rows_contiguous(const torch::Tensor& t) {
  return t.stride(1) == 1 && t.stride(0) >= t.size(1);
}

bool columns_contiguous(const torch::Tensor& t) {
  return t.stride(0) == 1 && t.stride(1) >= t.size(0);
}

bool jit_layout(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  for (const torch::Tensor* t : {&out, &a, &b})
    if (!t->is_cpu() || t->scalar_type() != torch::kFloat32 || t->dim() != 2 || t->numel() == 0)
      return false;
  return a.size(1) == b.size(0) && out.size(0) == a.size(0) && out.size(1) == b.size(1) &&
         rows_contiguous(out) && rows_contiguous(b) &&
         (rows_contiguous(a) || columns_contiguous(a));
}

// libxsmm is column-major: the row-major out[m, n] = a[m, k]·b[k, n] is its outᵀ = bᵀ·aᵀ, whose
// operands are b's and a's memory as they lie (a's transposed when a is a column-major view).
// A kernel is compiled once per shape and kept in libxsmm's thread-safe registry; false when
// it has none for this shape or CPU.
bool libxsmm_mm(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                bool accumulate) {
  const bool a_rows = rows_contiguous(a);
  const libxsmm_blasint m = b.size(1), n = a.size(0), k = a.size(1);
  const libxsmm_blasint lda = b.stride(0), ldb = a_rows ? a.stride(0) : a.stride(1),
                        ldc = out.stride(0);
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  const int flags = a_rows ? LIBXSMM_GEMM_FLAG_NONE : LIBXSMM_GEMM_FLAG_TRANS_B;
  const libxsmm_smmfunction kernel =
      libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  if (kernel == nullptr) return false;
  kernel(b.data_ptr<float>(), a.data_ptr<float>(), out.data_ptr<float>());
  return true;
}
#endif

// y = x·Wᵀ over x's rows, saving the rows and W for the backward: dx = dy·W, dW = dyᵀ·x.
struct JitLinear : public torch::autograd::Function<JitLinear> {
  // x: [..., in]; w: [out, in] → [..., out].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w) {
    const torch::Tensor rows = x.reshape({-1, x.size(-1)}).contiguous();
    const torch::Tensor y = torch::empty({rows.size(0), w.size(0)}, x.options());
    jit_mm_out(y, rows, w.t().contiguous(), /*accumulate=*/false);
    ctx->save_for_backward({rows, w});
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    std::vector<int64_t> y_sizes = x.sizes().vec();
    y_sizes.back() = w.size(0);
    return y.view(y_sizes);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &rows = saved[0], &w = saved[1];
    const torch::Tensor dy = grads[0].reshape({-1, w.size(0)}).contiguous();
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty_like(rows);
      jit_mm_out(dx, dy, w.contiguous(), /*accumulate=*/false);
      dx = dx.view(ctx->saved_data["x_sizes"].toIntVector());
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty_like(w);
      jit_mm_out(dw, dy.t(), rows, /*accumulate=*/false);
    }
    return {dx, dw};
  }
};

}  // namespace

torch::Tensor jit_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  const bool jit = fast_paths_enabled() && x.is_cpu() && weight.is_cpu() &&
                   x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                   x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1);
  return jit ? JitLinear::apply(x, weight) : torch::linear(x, weight);
}

void jit_mm_out(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                bool accumulate) {
#ifdef RECBOLE_WITH_LIBXSMM
  if (jit_layout(out, a, b) && libxsmm_mm(out, a, b, accumulate)) return;
#endif
  torch::Tensor target = out;
  if (accumulate)
    target.addmm_(a, b);
  else
    torch::mm_out(target, a, b);
}

std::string jit_gemm_kernels() {
#ifdef RECBOLE_WITH_LIBXSMM
  const char* target = libxsmm_get_target_arch();
  // libxsmm's "generic" target compiles no kernels: every product falls back.
  if (target != nullptr && std::string(target) != "generic")
    return std::string("libxsmm ") + target;
#endif
  return "libtorch";
}

}  // namespace recbole::kernels

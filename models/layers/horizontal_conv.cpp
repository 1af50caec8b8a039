#include "models/layers/horizontal_conv.h"

#include <cstdint>
#include <string>

#include "kernels/horizontal_conv.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

namespace {

// kernels::horizontal_conv_max_forward and _backward as one autograd node.
struct FusedHorizontalConvMax : public torch::autograd::Function<FusedHorizontalConvMax> {
  // w_all: every height's [nh, h, d] weights flattened one after the other; b_all: [heights·nh].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w_all, const torch::Tensor& b_all,
                               const std::vector<int64_t>& heights) {
    const torch::Tensor xc = x.contiguous();
    const kernels::HorizontalConvShape shape = shape_of(xc, heights, b_all.size(0));
    const int64_t cols = b_all.size(0);
    const torch::Tensor out = torch::empty({shape.batch, cols}, xc.options());
    const torch::Tensor arg = torch::empty({shape.batch, cols}, xc.options().dtype(torch::kInt32));
    kernels::horizontal_conv_max_forward(shape, xc.data_ptr<float>(), w_all.data_ptr<float>(),
                                         b_all.data_ptr<float>(), out.data_ptr<float>(),
                                         arg.data_ptr<int32_t>());
    ctx->save_for_backward({xc, w_all});
    ctx->saved_data["arg"] = arg;
    ctx->saved_data["heights"] = heights;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w_all = saved[1];
    const torch::Tensor arg = ctx->saved_data["arg"].toTensor();
    const std::vector<int64_t> heights = ctx->saved_data["heights"].toIntVector();
    const torch::Tensor grad = grads[0].contiguous();
    const int64_t cols = arg.size(1);
    const torch::Tensor dx = torch::empty_like(x);
    const torch::Tensor dw = torch::empty_like(w_all);
    const torch::Tensor db = torch::empty({cols}, x.options());
    kernels::horizontal_conv_max_backward(shape_of(x, heights, cols), x.data_ptr<float>(),
                                          w_all.data_ptr<float>(), grad.data_ptr<float>(),
                                          arg.data_ptr<int32_t>(), dx.data_ptr<float>(),
                                          dw.data_ptr<float>(), db.data_ptr<float>());
    return {dx, dw, db, torch::Tensor()};
  }

  static kernels::HorizontalConvShape shape_of(const torch::Tensor& x,
                                               const std::vector<int64_t>& heights, int64_t cols) {
    kernels::HorizontalConvShape shape;
    shape.batch = x.size(0);
    shape.length = x.size(1);
    shape.dim = x.size(2);
    shape.filters = cols / static_cast<int64_t>(heights.size());
    shape.heights = heights;
    return shape;
  }
};

}  // namespace

torch::Tensor horizontal_conv_max(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases) {
  const auto fail = [](const std::string& what) {
    throw Error("horizontal_conv_max: " + what +
                " (expected x [B, L, d], weights [nh, 1, h, d] with 1 ≤ h ≤ L and biases [nh])");
  };
  if (x.dim() != 3) fail("x has " + std::to_string(x.dim()) + " dimensions");
  if (weights.empty() || weights.size() != biases.size()) fail("no heights, or not one bias each");
  const int64_t nh = weights[0].size(0), L = x.size(1), d = x.size(2);
  bool fused =
      fast_paths_enabled() && x.is_cpu() && x.scalar_type() == torch::kFloat32 && L * d > 0;
  std::vector<int64_t> heights;
  for (size_t i = 0; i < weights.size(); ++i) {
    const torch::Tensor &w = weights[i], &b = biases[i];
    if (w.dim() != 4 || w.size(0) != nh || w.size(1) != 1 || w.size(2) < 1 || w.size(2) > L ||
        w.size(3) != d || b.dim() != 1 || b.size(0) != nh)
      fail("height " + std::to_string(i) + " has weights " + std::to_string(w.dim()) +
           "-dimensional or of another size");
    fused = fused && w.is_cpu() && b.is_cpu() && w.scalar_type() == torch::kFloat32 &&
            b.scalar_type() == torch::kFloat32;
    heights.push_back(w.size(2));
  }
  if (!fused) {
    const torch::Tensor image = x.unsqueeze(1);  // [B, 1, L, d]
    std::vector<torch::Tensor> pooled;
    for (size_t i = 0; i < weights.size(); ++i)  // [B, nh, L − h + 1, 1] → max → [B, nh]
      pooled.push_back(
          std::get<0>(torch::relu(torch::conv2d(image, weights[i], biases[i])).squeeze(3).max(2)));
    return torch::cat(pooled, 1);
  }
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& w : weights) flat.push_back(w.reshape({-1}));
  return FusedHorizontalConvMax::apply(x, torch::cat(flat), torch::cat(biases), heights);
}

}  // namespace recbole::models::layers

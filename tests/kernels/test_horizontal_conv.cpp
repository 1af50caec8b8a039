// kernels/horizontal_conv.h against libtorch's conv2d, ReLU and max over the positions composed
// (float64), its autograd gradients, and the windows its max picks.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "kernels/horizontal_conv.h"

namespace conv_test {

torch::Tensor floats_as_double(const std::vector<float>& v, torch::IntArrayRef sizes) {
  return torch::tensor(v, torch::kFloat32).view(sizes).to(torch::kFloat64);
}

}  // namespace conv_test

TEST_CASE("kernels::horizontal_conv_max_* equal conv2d, relu and max composed, and gradients",
          "[kernels][conv]") {
  using conv_test::floats_as_double;
  torch::manual_seed(21);
  const int64_t B = 3, L = 7;
  // nh = 5 and 8: filters in blocks of four and one, and two blocks; d = 20: a vector of 16 and
  // a tail, d = 32 whole vectors, d = 3 no vector at height 1; heights all, or some in any order.
  for (const int64_t nh : {5, 8})
    for (const int64_t d : {3, 20, 32})
      for (const std::vector<int64_t>& heights :
           {std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, std::vector<int64_t>{5, 2}}) {
        INFO("nh " << nh << ", d " << d << ", " << heights.size() << " heights");
        const int64_t n = static_cast<int64_t>(heights.size()), cols = n * nh;
        const torch::Tensor x32 = torch::randn({B, L, d});
        std::vector<torch::Tensor> w32, b32;
        for (const int64_t h : heights) {
          w32.push_back(torch::randn({nh, 1, h, d}) / std::sqrt(static_cast<double>(h * d)));
          torch::Tensor bias = torch::randn({nh});
          bias[3] = -10.0;  // every window of filter 3 is negative: ReLU cuts its max
          b32.push_back(bias);
        }
        std::vector<torch::Tensor> flat;
        for (const torch::Tensor& w : w32) flat.push_back(w.reshape({-1}));
        const torch::Tensor w_all = torch::cat(flat), b_all = torch::cat(b32);
        const torch::Tensor grad = torch::randn({B, cols});

        // libtorch in float64, and its gradients by autograd.
        const torch::Tensor x = x32.to(torch::kFloat64).requires_grad_();
        std::vector<torch::Tensor> w, b, pooled, where;
        for (int64_t i = 0; i < n; ++i) {
          w.push_back(w32[static_cast<size_t>(i)].to(torch::kFloat64).requires_grad_());
          b.push_back(b32[static_cast<size_t>(i)].to(torch::kFloat64).requires_grad_());
          const auto [best, at] =
              torch::relu(torch::conv2d(x.unsqueeze(1), w.back(), b.back())).squeeze(3).max(2);
          pooled.push_back(best);
          where.push_back(at);
        }
        const torch::Tensor want = torch::cat(pooled, 1);
        (want * grad.to(torch::kFloat64)).sum().backward();

        recbole::kernels::HorizontalConvShape shape;
        shape.batch = B;
        shape.length = L;
        shape.dim = d;
        shape.filters = nh;
        shape.heights = heights;
        std::vector<float> out(static_cast<size_t>(B * cols));
        std::vector<int32_t> arg(static_cast<size_t>(B * cols));
        recbole::kernels::horizontal_conv_max_forward(
            shape, x32.data_ptr<float>(), w_all.data_ptr<float>(), b_all.data_ptr<float>(),
            out.data(), arg.data());
        CHECK(torch::allclose(floats_as_double(out, {B, cols}), want.detach(), 1e-5, 1e-5));
        // The window of each kept max (conv2d's argmax), −1 where ReLU cut it.
        const torch::Tensor windows = torch::cat(where, 1);
        for (int64_t r = 0; r < B; ++r)
          for (int64_t col = 0; col < cols; ++col) {
            const size_t at = static_cast<size_t>(r * cols + col);
            INFO("sample " << r << ", column " << col);
            CHECK(arg[at] ==
                  (want[r][col].item<double>() > 0.0 ? windows[r][col].item<int64_t>() : -1));
          }

        // Poisoned outputs: the kernel writes every gradient, it does not add to them.
        std::vector<float> dx(static_cast<size_t>(B * L * d), 7.0f),
            dw(static_cast<size_t>(w_all.numel()), 7.0f), db(static_cast<size_t>(cols), 7.0f);
        recbole::kernels::horizontal_conv_max_backward(
            shape, x32.data_ptr<float>(), w_all.data_ptr<float>(), grad.data_ptr<float>(),
            arg.data(), dx.data(), dw.data(), db.data());
        CHECK(torch::allclose(floats_as_double(dx, {B, L, d}), x.grad(), 1e-5, 1e-5));
        std::vector<torch::Tensor> dw_want, db_want;
        for (int64_t i = 0; i < n; ++i) {
          dw_want.push_back(w[static_cast<size_t>(i)].grad().reshape({-1}));
          db_want.push_back(b[static_cast<size_t>(i)].grad());
        }
        CHECK(torch::allclose(floats_as_double(dw, {w_all.numel()}), torch::cat(dw_want), 1e-5,
                              1e-5));
        CHECK(torch::allclose(floats_as_double(db, {cols}), torch::cat(db_want), 1e-5, 1e-5));
      }
}

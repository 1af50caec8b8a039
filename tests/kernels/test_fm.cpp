// kernels/fm.h against RecBole's FM term composed in libtorch (float64) and its autograd
// gradient, and against its stated summation order bit for bit.
#include <catch2/catch.hpp>

#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "kernels/fm.h"

namespace fm_test {

std::vector<float> floats_of(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

torch::Tensor tensor_of(const std::vector<float>& v, torch::IntArrayRef sizes) {
  return torch::tensor(v, torch::kFloat32).view(sizes).to(torch::kFloat64);
}

}  // namespace fm_test

TEST_CASE("kernels::fm_logits and fm_gradient equal the FM term composed and its gradient",
          "[kernels][fm]") {
  using fm_test::floats_of;
  using fm_test::tensor_of;
  torch::manual_seed(3);
  // One field (the term is 0), and d below, at and past a vector's width.
  for (const auto& [b, f, d] :
       {std::tuple<int64_t, int64_t, int64_t>{5, 1, 3}, {7, 4, 16}, {4, 9, 37}}) {
    INFO("b " << b << ", f " << f << ", d " << d);
    const torch::Tensor e32 = torch::randn({b, f, d});
    const torch::Tensor z0 = torch::randn({b}), dz = torch::randn({b}),
                        deep = torch::randn({b, f, d});
    // RecBole's FMLayer (reduce_sum) in float64, and its gradient by autograd.
    const torch::Tensor e = e32.to(torch::kFloat64).requires_grad_();
    const torch::Tensor s = e.sum(1);
    const torch::Tensor term = 0.5 * (s.pow(2) - e.pow(2).sum(1)).sum(1);
    (term * dz.to(torch::kFloat64)).sum().backward();

    std::vector<float> rows = floats_of(e32), z = floats_of(z0), sums(static_cast<size_t>(b * d)),
                       squares(static_cast<size_t>(d));
    recbole::kernels::fm_logits(rows.data(), b, f, d, sums.data(), squares.data(), z.data());
    CHECK(torch::allclose(tensor_of(z, {b}), z0.to(torch::kFloat64) + term.detach(), 1e-5, 1e-5));
    CHECK(torch::allclose(tensor_of(sums, {b, d}), s.detach(), 1e-5, 1e-5));

    // The stated order, written out: per dimension over the fields, then over the dimensions.
    for (int64_t r = 0; r < b; ++r) {
      float t = 0.0f;
      for (int64_t k = 0; k < d; ++k) {
        float sk = rows[static_cast<size_t>(r * f * d + k)], qk = sk * sk;
        for (int64_t c = 1; c < f; ++c) {
          const float x = rows[static_cast<size_t>((r * f + c) * d + k)];
          sk += x;
          qk += x * x;
        }
        CHECK(sums[static_cast<size_t>(r * d + k)] == sk);
        t += sk * sk - qk;
      }
      CHECK(z[static_cast<size_t>(r)] == z0[r].item<float>() + 0.5f * t);
    }

    const std::vector<float> dzs = floats_of(dz), deeps = floats_of(deep);
    std::vector<float> grad = rows;
    recbole::kernels::fm_gradient(grad.data(), sums.data(), dzs.data(), nullptr, b, f, d);
    CHECK(torch::allclose(tensor_of(grad, {b, f, d}), e.grad(), 1e-5, 1e-5));
    // With the deep part's gradient added.
    grad = rows;
    recbole::kernels::fm_gradient(grad.data(), sums.data(), dzs.data(), deeps.data(), b, f, d);
    CHECK(torch::allclose(tensor_of(grad, {b, f, d}), e.grad() + deep.to(torch::kFloat64), 1e-5,
                          1e-5));
  }
}

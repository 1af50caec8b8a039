// kernels/bce.h against libtorch's binary_cross_entropy_with_logits and its autograd gradient.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "kernels/bce.h"

TEST_CASE("kernels::bce_with_logits equals libtorch's BCE with logits, loss and gradient",
          "[kernels][bce]") {
  torch::manual_seed(5);
  const int64_t n = 300, rows = 1000;  // a part of a 1000-row batch: dz is the mean's share
  // Logits of every size, saturated ones included, with hard and soft labels.
  torch::Tensor z32 = torch::randn({n}) * 4.0;
  z32[0] = 0.0f;
  z32[1] = 40.0f;
  z32[2] = -40.0f;
  z32[3] = 1e-6f;
  torch::Tensor y32 = (torch::rand({n}) < 0.5).to(torch::kFloat32);
  y32.narrow(0, n - 20, 20).uniform_(0.0, 1.0);

  const torch::Tensor z = z32.to(torch::kFloat64).requires_grad_();
  const torch::Tensor loss = torch::binary_cross_entropy_with_logits(z, y32.to(torch::kFloat64), {},
                                                                     {}, at::Reduction::Sum);
  (loss / static_cast<double>(rows)).backward();

  std::vector<float> dz(static_cast<size_t>(n), -1.0f);
  const double sum = recbole::kernels::bce_with_logits(z32.data_ptr<float>(), y32.data_ptr<float>(),
                                                       n, rows, dz.data());
  CHECK(sum == Approx(loss.item<double>()).epsilon(1e-6));
  const torch::Tensor got = torch::tensor(dz, torch::kFloat32).to(torch::kFloat64);
  CHECK(torch::allclose(got, z.grad(), 1e-5, 1e-9));
  for (const float g : dz) CHECK(std::isfinite(g));

  // Row by row: each term is that row's loss (a part's rows are summed by the caller).
  for (const int64_t r : {0, 1, 2, 3, 10}) {
    float one_dz = 0.0f;
    const double one = recbole::kernels::bce_with_logits(z32.data_ptr<float>() + r,
                                                         y32.data_ptr<float>() + r, 1, 1, &one_dz);
    const double want =
        torch::binary_cross_entropy_with_logits(z.detach()[r], y32.to(torch::kFloat64)[r])
            .item<double>();
    INFO("row " << r);
    CHECK(one == Approx(want).epsilon(1e-6).margin(1e-12));
    CHECK(one_dz == Approx(z.grad()[r].item<double>() * rows).epsilon(1e-5).margin(1e-9));
  }
}

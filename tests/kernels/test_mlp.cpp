// kernels/mlp.h against the deep part composed in libtorch (float64): Dropout → Linear → ReLU
// per hidden layer, a Linear to one logit, and autograd's gradients.
#include <catch2/catch.hpp>

#include <vector>

#include <torch/torch.h>

#include "kernels/mlp.h"

namespace mlp_test {

std::vector<float> floats_of(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

torch::Tensor tensor_of(const std::vector<float>& v, torch::IntArrayRef sizes) {
  return torch::tensor(v, torch::kFloat32).view(sizes).to(torch::kFloat64);
}

bool near(const std::vector<float>& got, const torch::Tensor& want) {
  return torch::allclose(tensor_of(got, want.sizes()), want, 1e-4, 1e-5);
}

}  // namespace mlp_test

TEST_CASE("kernels::mlp_* equal the deep part composed and its autograd gradients",
          "[kernels][mlp]") {
  using mlp_test::floats_of;
  using mlp_test::near;
  torch::manual_seed(9);
  const int64_t n = 37;
  // Two hidden layers, one, and none (the output layer reads x); with dropout and without.
  for (const std::vector<int64_t>& widths :
       {std::vector<int64_t>{23, 16, 8}, std::vector<int64_t>{40, 33}, std::vector<int64_t>{12}})
    for (const bool dropout : {true, false}) {
      INFO(widths.size() - 1 << " hidden layers, dropout " << dropout);
      const size_t layers = widths.size() - 1;
      const double p = 0.3;
      std::vector<torch::Tensor> w, b, masks;
      for (size_t k = 0; k < layers; ++k) {
        w.push_back((torch::randn({widths[k + 1], widths[k]}) / 3.0).to(torch::kFloat64));
        b.push_back((torch::randn({widths[k + 1]}) / 3.0).to(torch::kFloat64));
        masks.push_back(((torch::rand({n, widths[k]}) >= p).to(torch::kFloat32) / (1.0 - p))
                            .to(torch::kFloat64));
      }
      const torch::Tensor v = torch::randn({1, widths.back()}).to(torch::kFloat64);
      const torch::Tensor c = torch::randn({1}).to(torch::kFloat64);
      const torch::Tensor x = torch::randn({n, widths[0]}).to(torch::kFloat64);
      const torch::Tensor z0 = torch::randn({n}).to(torch::kFloat64);
      const torch::Tensor dz = torch::randn({n}).to(torch::kFloat64) / static_cast<double>(n);
      std::vector<torch::Tensor> params;
      for (size_t k = 0; k < layers; ++k) params.insert(params.end(), {w[k], b[k]});
      params.insert(params.end(), {v, c, x});
      for (torch::Tensor& t : params) t.requires_grad_();

      // libtorch: the composition and its gradients.
      torch::Tensor a = x;
      std::vector<torch::Tensor> hidden;  // each hidden layer's output
      for (size_t k = 0; k < layers; ++k) {
        a = torch::relu(torch::linear(dropout ? a * masks[k] : a, w[k], b[k]));
        hidden.push_back(a);
      }
      const torch::Tensor z = z0 + torch::linear(a, v, c).squeeze(1);
      (z * dz).sum().backward();

      // The kernels, a layer at a time, as layers::DirectMLP calls them.
      std::vector<std::vector<float>> in(layers + 1), out(layers), dropped(layers), mask(layers);
      in[0] = floats_of(x);
      for (size_t k = 0; k < layers; ++k) {
        const int64_t wi = widths[k], wo = widths[k + 1];
        out[k].resize(static_cast<size_t>(n * wo));
        mask[k] = floats_of(masks[k]);
        dropped[k].resize(static_cast<size_t>(n * wi));
        const std::vector<float> wt = floats_of(w[k].t()), bias = floats_of(b[k]);
        recbole::kernels::mlp_layer_forward(in[k].data(), dropout ? mask[k].data() : nullptr,
                                            dropped[k].data(), wt.data(), bias.data(), n, wi, wo,
                                            out[k].data());
        in[k + 1] = out[k];
        if (dropout) in[k] = dropped[k];  // the layer's input after the dropout, for backward
        CHECK(near(out[k], hidden[k].detach()));
      }
      const std::vector<float>& top = layers > 0 ? out.back() : in[0];
      const int64_t width = widths.back();
      std::vector<float> zs = floats_of(z0);
      const std::vector<float> vs = floats_of(v);
      recbole::kernels::mlp_logit_forward(top.data(), vs.data(), c.item<float>(), n, width,
                                          zs.data());
      CHECK(near(zs, z.detach()));

      const std::vector<float> dzs = floats_of(dz);
      std::vector<float> dv(static_cast<size_t>(width)), delta(static_cast<size_t>(n * width));
      float dc = 0.0f;
      recbole::kernels::mlp_logit_backward(dzs.data(), top.data(), vs.data(), n, width, layers > 0,
                                           dv.data(), &dc, delta.data());
      CHECK(near(dv, v.grad()));
      CHECK(dc == Approx(c.grad().item<double>()).margin(1e-5));
      for (size_t k = layers; k-- > 0;) {
        const int64_t wi = widths[k], wo = widths[k + 1];
        const std::vector<float> wk = floats_of(w[k]);
        std::vector<float> dw(static_cast<size_t>(wo * wi)), db(static_cast<size_t>(wo)),
            below(static_cast<size_t>(n * wi));
        recbole::kernels::mlp_layer_backward(
            delta.data(), in[k].data(), wk.data(), dropout ? mask[k].data() : nullptr,
            k > 0 ? out[k - 1].data() : nullptr, n, wi, wo, dw.data(), db.data(), below.data());
        INFO("layer " << k);
        CHECK(near(dw, w[k].grad()));
        CHECK(near(db, b[k].grad()));
        delta = below;
      }
      CHECK(near(delta, x.grad()));  // below the first layer: dloss/dx
    }
}

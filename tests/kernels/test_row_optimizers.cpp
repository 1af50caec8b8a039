// kernels/row_optimizers.h against torch::optim (Adam, SGD) and, for SparseAdam (no C++ class
// in libtorch 1.13), its update written out in double precision: a few steps on random rows,
// with the row length known at compile time (64) and not (37), each kernel run inside a
// RECBOLE_MULTIVERSION function as its users run it.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

#include <torch/torch.h>

#include "kernels/row_optimizers.h"

namespace {

namespace kn = recbole::kernels;
using Dim64 = std::integral_constant<int64_t, 64>;

RECBOLE_MULTIVERSION void adam_rows(float* p, const float* g, float* m, float* v, int64_t n,
                                    const kn::AdamConsts& c) {
  if (n == 64) return kn::adam_row(p, g, m, v, Dim64{}, c);
  kn::adam_row(p, g, m, v, n, c);
}

RECBOLE_MULTIVERSION void sparse_adam_rows(float* p, const float* g, float* m, float* v, int64_t n,
                                           const kn::AdamConsts& c) {
  if (n == 64) return kn::sparse_adam_row(p, g, m, v, Dim64{}, c);
  kn::sparse_adam_row(p, g, m, v, n, c);
}

RECBOLE_MULTIVERSION void sgd_rows(float* p, const float* g, int64_t n, float lr) {
  if (n == 64) return kn::sgd_row(p, g, Dim64{}, lr);
  kn::sgd_row(p, g, n, lr);
}

RECBOLE_MULTIVERSION void sgd_decay_rows(float* p, const float* g, int64_t n, float lr, float wd) {
  if (n == 64) return kn::sgd_decay_row(p, g, Dim64{}, lr, wd);
  kn::sgd_decay_row(p, g, n, lr, wd);
}

std::vector<float> random_row(std::mt19937& gen, int64_t n, float scale) {
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> r(static_cast<size_t>(n));
  for (float& x : r) x = normal(gen);
  return r;
}

torch::Tensor as_tensor(const std::vector<float>& v) { return torch::tensor(v, torch::kFloat32); }

// Gradients for `steps` steps; step 2 (of 0..) has none when `with_gap` (a null g: zero).
std::vector<std::vector<float>> random_grads(std::mt19937& gen, int64_t n, int steps,
                                             bool with_gap) {
  std::vector<std::vector<float>> g;
  for (int s = 0; s < steps; ++s)
    g.push_back(with_gap && s == 2 ? std::vector<float>() : random_row(gen, n, 0.01f));
  return g;
}

constexpr int kSteps = 5;

}  // namespace

TEST_CASE("adam_row follows torch::optim::Adam, with weight decay and a step without gradient",
          "[kernels]") {
  std::mt19937 gen(21);
  for (const int64_t n : {64, 37}) {
    for (const double wd : {0.0, 0.05}) {
      const std::vector<float> start = random_row(gen, n, 0.3f);
      const auto grads = random_grads(gen, n, kSteps, true);
      const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
      torch::Tensor ref = as_tensor(start).requires_grad_();
      torch::optim::Adam adam(
          {ref}, torch::optim::AdamOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
      std::vector<float> p = start, m(static_cast<size_t>(n)), v(static_cast<size_t>(n));
      for (int s = 1; s <= kSteps; ++s) {
        const std::vector<float>& g = grads[static_cast<size_t>(s - 1)];
        ref.mutable_grad() = g.empty() ? torch::zeros({n}) : as_tensor(g);
        adam.step();
        const double bc1 = 1 - std::pow(b1, s), bc2 = 1 - std::pow(b2, s);
        kn::AdamConsts c;
        c.b1 = static_cast<float>(b1);
        c.b2 = static_cast<float>(b2);
        c.eps = static_cast<float>(eps);
        c.wd = static_cast<float>(wd);
        c.step_size = static_cast<float>(lr / bc1);
        c.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
        adam_rows(p.data(), g.empty() ? nullptr : g.data(), m.data(), v.data(), n, c);
      }
      INFO("n " << n << ", weight_decay " << wd);
      // The kernel decays v by 1 − 0.999f, torch by float(1 − 0.999): 1.3e-5 apart, so a step
      // differs by ~7e-6 of its size (lr) after the square root.
      CHECK(torch::allclose(as_tensor(p), ref.detach(), 1e-5, 1e-6));
      CHECK_FALSE(torch::allclose(as_tensor(p), as_tensor(start), 1e-5, 1e-6));  // it moved
    }
  }
}

TEST_CASE("sparse_adam_row follows SparseAdam's update written out in double precision",
          "[kernels]") {
  std::mt19937 gen(22);
  for (const int64_t n : {64, 37}) {
    const std::vector<float> start = random_row(gen, n, 0.3f);
    const auto grads = random_grads(gen, n, kSteps, false);
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    // The moments decay by the betas as the kernel receives them, in float (1 − 0.999f is
    // 1.3e-5 off 0.001); the bias correction is the caller's, in double, folded into step_size.
    const double b1f = static_cast<float>(b1), b2f = static_cast<float>(b2);
    std::vector<double> rp(start.begin(), start.end()), rm(static_cast<size_t>(n)),
        rv(static_cast<size_t>(n));
    std::vector<float> p = start, m(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    for (int s = 1; s <= kSteps; ++s) {
      const std::vector<float>& g = grads[static_cast<size_t>(s - 1)];
      // torch.optim.SparseAdam: the moments of the rows with a gradient, bias correction by the
      // step count folded into the step size.
      const double bc1 = 1 - std::pow(b1, s), bc2 = 1 - std::pow(b2, s);
      for (size_t k = 0; k < rp.size(); ++k) {
        rm[k] = b1f * rm[k] + (1 - b1f) * g[k];
        rv[k] = b2f * rv[k] + (1 - b2f) * g[k] * g[k];
        rp[k] -= lr * std::sqrt(bc2) / bc1 * rm[k] / (std::sqrt(rv[k]) + eps);
      }
      kn::AdamConsts c;
      c.b1 = static_cast<float>(b1);
      c.b2 = static_cast<float>(b2);
      c.eps = static_cast<float>(eps);
      c.wd = 0.f;
      c.step_size = static_cast<float>(lr * std::sqrt(bc2) / bc1);
      c.inv_sqrt_bc2 = 1.f;
      sparse_adam_rows(p.data(), g.data(), m.data(), v.data(), n, c);
    }
    INFO("n " << n);
    for (size_t k = 0; k < rp.size(); ++k) {
      CHECK(p[k] == Approx(rp[k]).epsilon(1e-5).margin(1e-7));
      CHECK(m[k] == Approx(rm[k]).epsilon(1e-5).margin(1e-9));
      CHECK(v[k] == Approx(rv[k]).epsilon(1e-5).margin(1e-12));
    }
  }
}

TEST_CASE("sgd_row and sgd_decay_row follow torch::optim::SGD", "[kernels]") {
  std::mt19937 gen(23);
  for (const int64_t n : {64, 37}) {
    for (const double wd : {0.0, 0.05}) {
      const std::vector<float> start = random_row(gen, n, 0.3f);
      // sgd_row takes a gradient at every step; sgd_decay_row also none (the row only decays).
      const auto grads = random_grads(gen, n, kSteps, wd > 0);
      const double lr = 0.5;
      torch::Tensor ref = as_tensor(start).requires_grad_();
      torch::optim::SGD sgd({ref}, torch::optim::SGDOptions(lr).weight_decay(wd));
      std::vector<float> p = start;
      for (int s = 1; s <= kSteps; ++s) {
        const std::vector<float>& g = grads[static_cast<size_t>(s - 1)];
        ref.mutable_grad() = g.empty() ? torch::zeros({n}) : as_tensor(g);
        sgd.step();
        if (wd > 0)
          sgd_decay_rows(p.data(), g.empty() ? nullptr : g.data(), n, static_cast<float>(lr),
                         static_cast<float>(wd));
        else
          sgd_rows(p.data(), g.data(), n, static_cast<float>(lr));
      }
      INFO("n " << n << ", weight_decay " << wd);
      CHECK(torch::allclose(as_tensor(p), ref.detach(), 1e-6, 1e-7));
      CHECK_FALSE(torch::allclose(as_tensor(p), as_tensor(start), 1e-5, 1e-7));
    }
  }
}

// The shared model layers against independent formulas: the normalised bipartite adjacency
// (RecBole's values), the sparse product and its gradient against dense libtorch, the losses,
// padded histories, the context embedding's direct path against its autograd one.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "kernels/jit_gemm.h"
#include "models/layers/attention.h"
#include "models/layers/backward_parts.h"
#include "models/layers/context_embedding.h"
#include "models/layers/dropout.h"
#include "models/layers/gathered_bpr_loss.h"
#include "models/layers/gelu.h"
#include "models/layers/graph.h"
#include "models/layers/gru.h"
#include "models/layers/history.h"
#include "models/layers/horizontal_conv.h"
#include "models/layers/init.h"
#include "models/layers/item_cross_entropy.h"
#include "models/layers/losses.h"
#include "models/layers/narm_encoder.h"
#include "models/layers/ngcf_layer.h"
#include "models/layers/patch_conv.h"
#include "models/layers/residual_norm.h"
#include "models/layers/self_attention.h"
#include "models/layers/sequence.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "tests/models/model_fixture.h"
#include "tests/source_lint.h"

namespace layers = recbole::models::layers;
using recbole::testing::dense;

namespace {

const recbole::DeviceManager& cpu() {
  static const recbole::DeviceManager device = [] {
    recbole::DeviceSettings s;
    s.device = "cpu";
    return recbole::DeviceManager(s);
  }();
  return device;
}

}  // namespace

TEST_CASE("the normalised bipartite adjacency has RecBole's values", "[models][layers]") {
  // 3 users (0 = pad), 3 items (0 = pad); user 1: items 1, 2; user 2: item 2 twice.
  const std::vector<int32_t> users{1, 1, 2, 2}, items{1, 2, 2, 2};
  layers::SparseMatrix binary = layers::bipartite_adjacency(3, 3, users, items, false);
  REQUIRE(binary.rows == 6);
  REQUIRE(binary.nnz() == 6);  // the repeated pair counts once
  torch::Tensor a = dense(layers::symmetric_normalized(binary));
  // deg(user 1) = 2, deg(user 2) = 1, deg(item 1) = 1, deg(item 2) = 2 (+1e-7).
  CHECK(a[1][3 + 1].item<float>() == Approx(1 / std::sqrt(2.0 * 1.0)));
  CHECK(a[1][3 + 2].item<float>() == Approx(1 / std::sqrt(2.0 * 2.0)));
  CHECK(a[2][3 + 2].item<float>() == Approx(1 / std::sqrt(1.0 * 2.0)));
  CHECK(torch::equal(a, a.t()));
  CHECK(a[0].abs().sum().item<float>() == 0);  // the pad user is isolated
  CHECK(a[3].abs().sum().item<float>() == 0);  // the pad item too

  // Weighted (SGL): the repeated pair counts twice and the degrees are weighted sums.
  torch::Tensor w =
      dense(layers::symmetric_normalized(layers::bipartite_adjacency(3, 3, users, items, true)),
            torch::kFloat32);
  CHECK(w[2][3 + 2].item<float>() == Approx(2 / std::sqrt(2.0 * 3.0)));
}

TEST_CASE("the sparse product and its gradient equal dense libtorch on any thread count",
          "[models][layers]") {
  torch::manual_seed(7);
  std::vector<int64_t> r, c;
  std::vector<float> v;
  for (int k = 0; k < 4000; ++k) {
    r.push_back(k % 300);
    c.push_back((k * 37) % 200);
    v.push_back(static_cast<float>((k % 13) - 6) / 7.0f);
  }
  layers::SparseMatrix m = layers::SparseMatrix::from_triplets(300, 200, r, c, v);
  const torch::Tensor d = dense(m, torch::kFloat32);
  CHECK(torch::allclose(dense(m.transpose(), torch::kFloat32), d.t()));
  const layers::GraphOperator op(m, /*symmetric=*/false, cpu());

  const torch::Tensor x0 = torch::randn({200, 64});
  const torch::Tensor weights = torch::randn({300, 64});
  torch::Tensor expected_grad;
  {
    torch::Tensor x = x0.clone().requires_grad_(true);
    (torch::mm(d, x) * weights).sum().backward();
    expected_grad = x.grad().clone();
  }
  recbole::ThreadPool& pool = recbole::ThreadPool::instance();
  const int before = pool.threads();
  torch::Tensor first;
  for (int threads : {1, 2, 3}) {
    pool.set_threads(threads);
    torch::Tensor x = x0.clone().requires_grad_(true);
    torch::Tensor y = layers::spmm(op, x);
    CHECK(torch::allclose(y, torch::mm(d, x0), 1e-5, 1e-5));
    if (first.defined()) CHECK(torch::equal(y, first));  // bit-identical across thread counts
    first = y.detach();
    (y * weights).sum().backward();
    CHECK(torch::allclose(x.grad(), expected_grad, 1e-5, 1e-5));
  }
  pool.set_threads(before);
}

namespace {

// The loss and the gradients of `inputs` (leaves) of f(inputs), with libtorch's generator
// seeded first (dropout masks).
std::vector<torch::Tensor> value_and_grads(
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
    const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> leaves;
  for (const auto& x : inputs) leaves.push_back(x.clone().requires_grad_(true));
  torch::manual_seed(11);
  const torch::Tensor y = f(leaves);
  y.backward();
  std::vector<torch::Tensor> out{y.detach()};
  for (const auto& x : leaves) out.push_back(x.grad());
  return out;
}

// Runs fused and composed on 1, 2 and 3 threads: close to the composed value and gradients,
// bit-identical across thread counts.
void check_fused(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& fused,
                 const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& composed,
                 const std::vector<torch::Tensor>& inputs) {
  const auto want = value_and_grads(composed, inputs);
  recbole::ThreadPool& pool = recbole::ThreadPool::instance();
  const int before = pool.threads();
  std::vector<torch::Tensor> first;
  for (int threads : {1, 2, 3}) {
    pool.set_threads(threads);
    const auto got = value_and_grads(fused, inputs);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      INFO("output " << k << " (0: the value, then each input's gradient), threads " << threads
                     << ", largest difference " << (got[k] - want[k]).abs().max().item<double>()
                     << " of values up to " << want[k].abs().max().item<double>());
      REQUIRE(got[k].defined());
      CHECK(torch::allclose(got[k], want[k], 1e-4, 1e-4));
      if (!first.empty()) CHECK(torch::equal(got[k], first[k]));
    }
    first = got;
  }
  pool.set_threads(before);
}

}  // namespace

TEST_CASE("the fused NGCF layer equals its composed form, forward and backward",
          "[models][layers][ngcf]") {
  torch::manual_seed(3);
  for (int64_t out_d : {4, 12}) {
    // Rows of e and s; with 4 outputs and dropout 0.5 some rows lose every element (norm 0).
    const std::vector<torch::Tensor> inputs{torch::randn({300, 16}),   torch::randn({300, 16}),
                                            torch::randn({out_d, 16}), torch::randn({out_d}),
                                            torch::randn({out_d, 16}), torch::randn({out_d})};
    const torch::Tensor weights = torch::randn({300, out_d});
    for (const double p : {0.0, 0.5}) {
      INFO("outputs " << out_d << ", dropout " << p);
      auto make = [&](bool fused) {
        return [&, fused](const std::vector<torch::Tensor>& x) {
          const auto layer = fused ? layers::ngcf_layer : layers::ngcf_layer_composed;
          return (layer(x[0], x[1], x[2], x[3], x[4], x[5], p, true) * weights).sum();
        };
      };
      check_fused(make(true), make(false), inputs);
    }
  }
}

TEST_CASE("jit_mm_out equals libtorch's product, overwriting or accumulating",
          "[models][layers][gru]") {
  torch::manual_seed(12);
  INFO("kernels: " << recbole::kernels::jit_gemm_kernels());
  // The GRU's shapes at ml-100k's defaults (a step, its backward, a weight gradient over 50
  // steps of 128 rows, whose a is a transposed view), odd sizes, one row, and operands whose rows
  // are strided (a narrowed column range): each overwriting and accumulating.
  struct Shape {
    int64_t m, k, n, pad;
    bool a_transposed;
  };
  for (const Shape s : std::vector<Shape>{{128, 128, 384, 0, false},
                                          {128, 384, 128, 0, false},
                                          {256, 6400, 128, 0, true},
                                          {37, 5, 15, 0, false},
                                          {1, 7, 3, 0, false},
                                          {9, 6, 11, 3, false},
                                          {9, 6, 11, 3, true}}) {
    for (const bool accumulate : {false, true}) {
      INFO(s.m << "x" << s.k << (s.a_transposed ? " (transposed)" : "") << " times " << s.k << "x"
               << s.n << ", row padding " << s.pad
               << (accumulate ? ", accumulating" : ", overwriting"));
      const torch::Tensor a = s.a_transposed
                                  ? torch::randn({s.k, s.m + s.pad}).narrow(1, 0, s.m).t()
                                  : torch::randn({s.m, s.k + s.pad}).narrow(1, 0, s.k);
      const torch::Tensor b = torch::randn({s.k, s.n + s.pad}).narrow(1, 0, s.n);
      const torch::Tensor start = torch::randn({s.m, s.n + s.pad});
      const torch::Tensor full = start.clone();
      const torch::Tensor out = full.narrow(1, 0, s.n);
      recbole::kernels::jit_mm_out(out, a, b, accumulate);
      const torch::Tensor want = accumulate ? start.narrow(1, 0, s.n) + a.mm(b) : a.mm(b);
      // Relative to the sum's scale: a k-term sum is rounded in another order.
      const double scale = std::sqrt(static_cast<double>(s.k));
      INFO("largest difference " << (out - want).abs().max().item<double>());
      CHECK(torch::allclose(out, want, 1e-4, 1e-5 * scale));
      // The padding beside out's rows is untouched.
      if (s.pad > 0) CHECK(torch::equal(full.narrow(1, s.n, s.pad), start.narrow(1, s.n, s.pad)));
    }
  }
}

TEST_CASE("jit_linear equals torch::linear, outputs and gradients", "[models][layers][gru]") {
  torch::manual_seed(13);
  const torch::Tensor x = torch::randn({4, 7, 6}).requires_grad_(true);
  const torch::Tensor w = torch::randn({5, 6}).requires_grad_(true);
  const torch::Tensor weights = torch::randn({4, 7, 5});
  auto run = [&](bool jit) {
    x.mutable_grad() = torch::Tensor();
    w.mutable_grad() = torch::Tensor();
    const torch::Tensor y = jit ? recbole::kernels::jit_linear(x, w) : torch::linear(x, w);
    (y * weights).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), x.grad().clone(), w.grad().clone()};
  };
  const auto want = run(false);
  const auto got = run(true);
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("output " << k << " (0: y, 1: x's gradient, 2: the weight's)");
    CHECK(got[k].sizes() == want[k].sizes());
    CHECK(torch::allclose(got[k], want[k], 1e-4, 1e-5));
  }
}

TEST_CASE("the fused GRU equals libtorch's GRU, outputs and gradients", "[models][layers][gru]") {
  torch::manual_seed(11);
  for (const int64_t n_layers : {1, 2}) {
    INFO(n_layers << " layer(s)");
    torch::nn::GRU gru(
        torch::nn::GRUOptions(6, 5).num_layers(n_layers).bias(false).batch_first(true));
    // Inputs large enough that gates saturate somewhere; a weighted sum of every step's output.
    const torch::Tensor x = (3 * torch::randn({37, 9, 6})).requires_grad_(true);
    const torch::Tensor weights = torch::randn({37, 9, 5});
    auto run = [&](bool fused) {
      gru->zero_grad();
      x.mutable_grad() = torch::Tensor();
      const torch::Tensor out = fused ? layers::gru_outputs(gru, x) : std::get<0>(gru->forward(x));
      (out * weights).sum().backward();
      std::vector<torch::Tensor> got{out.detach(), x.grad().clone()};
      for (const auto& p : gru->parameters()) got.push_back(p.grad().clone());
      return got;
    };
    const auto want = run(false);
    const auto got = run(true);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      INFO("output " << k << " (0: the outputs, 1: x's gradient, then each weight's), largest "
                     << "difference " << (got[k] - want[k]).abs().max().item<double>());
      CHECK(torch::allclose(got[k], want[k], 1e-4, 1e-5));
    }
  }
}

TEST_CASE("the fused NARM encoders equal RecBole's composed ones, values and gradients",
          "[models][layers][gru]") {
  torch::manual_seed(12);
  const int64_t b = 7, steps = 9, hidden = 19;
  // Lengths from 1 to the whole row; states past a row's length must not count.
  const torch::Tensor lengths = torch::tensor({1, 2, 4, 9, 3, 8, 9}, torch::kLong);
  const torch::Tensor g = (2 * torch::randn({b, steps, hidden})).requires_grad_(true);
  const torch::Tensor a1 = torch::randn({hidden, hidden}).requires_grad_(true);
  const torch::Tensor a2 = torch::randn({hidden, hidden}).requires_grad_(true);
  const torch::Tensor v = torch::randn({1, hidden}).requires_grad_(true);
  const torch::Tensor weights = torch::randn({b, 2 * hidden});
  auto run = [&](bool fused) {
    for (const auto* t : {&g, &a1, &a2, &v}) t->mutable_grad() = torch::Tensor();
    torch::Tensor c;
    if (fused) {
      c = layers::narm_encoder(g, a1, a2, v, lengths);
    } else {  // as RecBole: α = v(mask ⊙ σ(A1 g + A2 c_g)), [Σ_t α_t g_t ; c_g]
      const torch::Tensor c_g = layers::gather_last(g, lengths);
      const torch::Tensor mask =
          (torch::arange(steps).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(2).to(torch::kFloat);
      const torch::Tensor alpha = torch::linear(
          mask * torch::sigmoid(torch::linear(g, a1) + torch::linear(c_g, a2).unsqueeze(1)), v);
      c = torch::cat({(alpha * g).sum(1), c_g}, 1);
    }
    (c * weights).sum().backward();
    return std::vector<torch::Tensor>{c.detach(), g.grad().clone(), a1.grad().clone(),
                                      a2.grad().clone(), v.grad().clone()};
  };
  const auto want = run(false);
  const auto got = run(true);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i << " (0: [c_l ; c_g], then the gradients of g, A1, A2, v), largest "
                   << "difference " << (got[i] - want[i]).abs().max().item<double>());
    REQUIRE(got[i].sizes() == want[i].sizes());
    CHECK(torch::allclose(got[i], want[i], 1e-4, 1e-4));
  }
  CHECK_THROWS_WITH(layers::narm_encoder(g, a1, a2, v, lengths - 1),
                    Catch::Contains("lengths must lie in [1, 9]"));
}

TEST_CASE("the fused attention weights equal softmax, mask and dropout composed",
          "[models][layers][attention]") {
  torch::manual_seed(8);
  // Rows 0-2 padded at different lengths (keys masked), row 3 all padding (every key masked:
  // RecBole's −10000 then shifts every score alike); scores large enough to push exp to its
  // ends.
  torch::Tensor seq = torch::randint(1, 9, {4, 7}, torch::kInt64);
  seq[0].narrow(0, 5, 2).zero_();
  seq[1].narrow(0, 1, 6).zero_();
  seq[3].zero_();
  const torch::Tensor scores = 30 * torch::randn({4, 3, 7, 7});
  const torch::Tensor weights = torch::randn({4, 3, 7, 7});
  for (const bool causal : {true, false}) {
    const torch::Tensor mask = layers::attention_mask(seq, causal);
    for (const double p : {0.0, 0.4, 1.0})
      for (const bool training : {true, false}) {
        INFO("causal " << causal << ", p " << p << ", training " << training);
        check_fused(
            [&](const std::vector<torch::Tensor>& x) {
              return (layers::attention_weights(x[0], mask, 0.3, p, training) * weights).sum();
            },
            [&](const std::vector<torch::Tensor>& x) {
              const torch::Tensor y = torch::softmax(x[0] * 0.3 + mask, -1);
              return (layers::dropout(y, p, training) * weights).sum();
            },
            {scores});
      }
  }
  // Without dropout every row sums to 1, and masked keys get nothing.
  const torch::Tensor y =
      layers::attention_weights(scores, layers::attention_mask(seq, true), 0.3, 0.0, false);
  CHECK(torch::allclose(y.sum(-1), torch::ones({4, 3, 7}), 1e-5, 1e-5));
  CHECK(y[1].narrow(-1, 1, 6).abs().max().item<float>() == 0.0f);
}

TEST_CASE("the fused attention context equals the per-head products composed",
          "[models][layers][attention]") {
  torch::manual_seed(12);
  torch::Tensor seq = torch::randint(1, 9, {5, 7}, torch::kInt64);
  seq[0].narrow(0, 4, 3).zero_();
  seq[2].narrow(0, 1, 6).zero_();
  const torch::Tensor qkv = 2 * torch::randn({5, 7, 18});  // d = 6
  const torch::Tensor weights = torch::randn({5, 7, 6});
  for (const int64_t heads : {1, 2, 3})
    for (const bool causal : {true, false}) {
      const torch::Tensor mask = layers::attention_mask(seq, causal);
      for (const double p : {0.0, 0.4})
        for (const bool training : {true, false}) {
          INFO(heads << " heads, causal " << causal << ", p " << p << ", training " << training);
          const double scale = 1.0 / std::sqrt(6.0 / double(heads));
          check_fused(
              [&](const std::vector<torch::Tensor>& x) {
                return (layers::attention_context(x[0], mask, heads, scale, p, training) * weights)
                    .sum();
              },
              [&](const std::vector<torch::Tensor>& x) {
                // [B, L, 3, heads, d_h] → q, k, v as [B, heads, L, d_h]
                const torch::Tensor parts =
                    x[0].view({5, 7, 3, heads, 6 / heads}).permute({2, 0, 3, 1, 4});
                const torch::Tensor a = torch::softmax(
                    torch::matmul(parts[0], parts[1].transpose(-1, -2)) * scale + mask, -1);
                const torch::Tensor ctx = torch::matmul(layers::dropout(a, p, training), parts[2]);
                return (ctx.transpose(1, 2).reshape({5, 7, 6}) * weights).sum();
              },
              {qkv});
        }
    }
}

TEST_CASE("the fused GELU equals torch::gelu, values and gradients", "[models][layers]") {
  torch::manual_seed(9);
  // From far below (where GELU is ~0) through 0 to far above (where it is x).
  const torch::Tensor x = torch::cat({torch::linspace(-12, 12, 2001), 3 * torch::randn({999})});
  const torch::Tensor weights = torch::randn({30, 100});
  check_fused(
      [&](const std::vector<torch::Tensor>& in) { return (layers::gelu(in[0]) * weights).sum(); },
      [&](const std::vector<torch::Tensor>& in) { return (torch::gelu(in[0]) * weights).sum(); },
      {x.view({30, 100})});
  const torch::Tensor fine = torch::linspace(-12, 12, 2001);
  CHECK((layers::gelu(fine) - torch::gelu(fine)).abs().max().item<double>() < 2e-6);
}

TEST_CASE("the fused residual norm equals dropout, sum and layer_norm composed",
          "[models][layers]") {
  torch::manual_seed(4);
  for (const int64_t d : {6, 64}) {
    // A constant row (variance 0: only eps keeps rstd finite) among random ones.
    torch::Tensor y = 3 * torch::randn({5, 7, d}) + 1;
    torch::Tensor x = torch::randn({5, 7, d});
    y[2][3].fill_(0.5);
    x[2][3].fill_(-0.25);
    const std::vector<torch::Tensor> inputs{y, x, 1 + torch::randn({d}), torch::randn({d})};
    const torch::Tensor weights = torch::randn({5, 7, d});
    for (const double p : {0.0, 0.3, 1.0})
      for (const bool training : {true, false}) {
        INFO("d " << d << ", p " << p << ", training " << training);
        check_fused(
            [&](const std::vector<torch::Tensor>& in) {
              return (layers::residual_norm(in[0], in[1], in[2], in[3], 1e-5, p, training) *
                      weights)
                  .sum();
            },
            [&](const std::vector<torch::Tensor>& in) {
              return (torch::layer_norm(layers::dropout(in[0], p, training) + in[1], {d}, in[2],
                                        in[3], 1e-5) *
                      weights)
                  .sum();
            },
            inputs);
      }
  }
}

TEST_CASE("the fused item cross-entropy equals matmul and cross_entropy composed",
          "[models][layers]") {
  torch::manual_seed(6);
  // 37 items (not a multiple of the eight lanes), targets repeated and including column 0; h
  // large enough that the exponentials would overflow without the maximum subtracted.
  const torch::Tensor h = 4 * torch::randn({23, 10});
  const torch::Tensor items = 3 * torch::randn({37, 10});
  const torch::Tensor bias = torch::randn({37});
  torch::Tensor targets = torch::randint(0, 37, {23}, torch::kInt64);
  targets[0] = 0;
  targets[1] = targets[2];
  for (const bool with_bias : {true, false})
    for (const double scale : {1.0, 0.25}) {
      INFO("bias " << with_bias << ", scale " << scale);
      // Without a bias the inputs are h and items only (an unused leaf has no gradient).
      auto bias_of = [](const std::vector<torch::Tensor>& in) {
        return in.size() > 2 ? in[2] : torch::Tensor();
      };
      check_fused(
          [&](const std::vector<torch::Tensor>& in) {
            return 1.5 * layers::item_cross_entropy(in[0], in[1], bias_of(in), targets, scale);
          },
          [&](const std::vector<torch::Tensor>& in) {
            torch::Tensor logits = torch::matmul(in[0], in[1].t()) * scale;
            if (in.size() > 2) logits = logits + in[2];
            return 1.5 *
                   torch::nn::functional::cross_entropy(
                       logits, targets,
                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
          },
          with_bias ? std::vector<torch::Tensor>{h, items, bias}
                    : std::vector<torch::Tensor>{h, items});
    }
  CHECK_THROWS_AS(layers::item_cross_entropy(h, items, bias, targets + 37), recbole::Error);
  CHECK_THROWS_AS(layers::item_cross_entropy(h, items.t(), bias, targets), recbole::Error);

  // More rows and items than a block of the pool (64), weighted rows: the same loss and
  // gradients to the bit at 1, 2 and 3 threads, and the composed form's values.
  const torch::Tensor big_h = torch::randn({150, 10}), big_items = torch::randn({131, 10});
  const torch::Tensor big_targets = torch::randint(0, 131, {150}, torch::kInt64);
  const torch::Tensor weights = torch::randint(1, 4, {150}).to(torch::kFloat32);
  recbole::ThreadPool& pool = recbole::ThreadPool::instance();
  const int before = pool.threads();
  std::vector<torch::Tensor> first;
  for (int threads : {1, 2, 3}) {
    pool.set_threads(threads);
    const torch::Tensor x = big_h.clone().requires_grad_(), y = big_items.clone().requires_grad_();
    const torch::Tensor loss = layers::item_cross_entropy(x, y, {}, big_targets, 0.5, weights);
    loss.backward();
    const std::vector<torch::Tensor> now{loss.detach(), x.grad(), y.grad()};
    if (first.empty()) {
      first = now;
      const torch::Tensor x2 = big_h.clone().requires_grad_(),
                          y2 = big_items.clone().requires_grad_();
      namespace F = torch::nn::functional;
      const torch::Tensor composed =
          (F::cross_entropy(torch::matmul(x2, y2.t()) * 0.5, big_targets,
                            F::CrossEntropyFuncOptions().reduction(torch::kNone)) *
           weights)
              .sum();
      composed.backward();
      CHECK(loss.item<double>() == Approx(composed.item<double>()).epsilon(1e-5));
      CHECK(torch::allclose(x.grad(), x2.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(y.grad(), y2.grad(), 1e-4, 1e-5));
    }
    for (size_t k = 0; k < now.size(); ++k) CHECK(torch::equal(now[k], first[k]));
  }
  pool.set_threads(before);
}

TEST_CASE("the fused horizontal convolution equals conv2d, relu and max composed",
          "[models][layers]") {
  torch::manual_seed(12);
  const int64_t B = 3, L = 7, nh = 5;  // filters in blocks of four and one; windows of 7 … 1
  // d = 64: whole vectors of 16; d = 20: a vector and a tail of 4. Heights all, or some in any
  // order.
  for (const int64_t d : {20, 64})
    for (const std::vector<int64_t>& heights :
         {std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, std::vector<int64_t>{5, 2}}) {
      INFO("d " << d << ", " << heights.size() << " heights");
      const size_t n = heights.size();
      std::vector<torch::Tensor> inputs{torch::randn({B, L, d})};
      for (const int64_t h : heights)
        inputs.push_back(torch::randn({nh, 1, h, d}) / std::sqrt(static_cast<double>(h * d)));
      for (size_t i = 0; i < n; ++i) {
        torch::Tensor bias = torch::randn({nh});
        bias[3] = -10.0;  // every window of filter 3 is negative: ReLU cuts its max
        inputs.push_back(bias);
      }
      const torch::Tensor weights = torch::randn({B, nh * static_cast<int64_t>(n)});
      const auto part = [](const std::vector<torch::Tensor>& in, size_t from, size_t count) {
        return std::vector<torch::Tensor>(in.begin() + from, in.begin() + from + count);
      };
      check_fused(
          [&](const std::vector<torch::Tensor>& in) {
            return (layers::horizontal_conv_max(in[0], part(in, 1, n), part(in, 1 + n, n)) *
                    weights)
                .sum();
          },
          [&](const std::vector<torch::Tensor>& in) {
            std::vector<torch::Tensor> pooled;
            for (size_t i = 0; i < n; ++i)
              pooled.push_back(std::get<0>(
                  torch::relu(torch::conv2d(in[0].unsqueeze(1), in[1 + i], in[1 + n + i]))
                      .squeeze(3)
                      .max(2)));
            return (torch::cat(pooled, 1) * weights).sum();
          },
          inputs);
    }
  const torch::Tensor x = torch::randn({2, 3, 4});
  CHECK_THROWS_WITH(
      layers::horizontal_conv_max(x, {torch::randn({2, 1, 4, 4})}, {torch::randn({2})}),
      Catch::Contains("1 ≤ h ≤ L"));
  CHECK_THROWS_WITH(
      layers::horizontal_conv_max(x, {torch::randn({2, 1, 2, 5})}, {torch::randn({2})}),
      Catch::Contains("1 ≤ h ≤ L"));
  CHECK_THROWS_WITH(layers::horizontal_conv_max(x, {torch::randn({2, 1, 2, 4})}, {}),
                    Catch::Contains("one bias each"));
}

TEST_CASE("a convolution with its stride equal to its kernel equals Conv2d, channels last",
          "[models][layers]") {
  torch::manual_seed(13);
  // 9 × 10 maps under 4 × 3 patches: the last row and column fill no patch and are dropped.
  const std::vector<torch::Tensor> inputs{torch::randn({3, 2, 9, 10}), torch::randn({5, 2, 4, 3}),
                                          torch::randn({5})};
  const torch::Tensor weights = torch::randn({3, 2, 3, 5});  // [N, H', W', C_out]
  check_fused(
      [&](const std::vector<torch::Tensor>& in) {
        return (layers::patch_conv2d(in[0].permute({0, 2, 3, 1}), in[1], in[2]) * weights).sum();
      },
      [&](const std::vector<torch::Tensor>& in) {
        return (torch::conv2d(in[0], in[1], in[2], {4, 3}).permute({0, 2, 3, 1}) * weights).sum();
      },
      inputs);
  CHECK_THROWS_WITH(layers::patch_conv2d(torch::randn({1, 3, 3, 2}), torch::randn({5, 2, 4, 3}),
                                         torch::randn({5})),
                    Catch::Contains("kh ≤ H"));
}

TEST_CASE("the fused gathered BPR loss equals index_select, bpr_loss and emb_loss",
          "[models][layers]") {
  torch::manual_seed(5);
  // 700 rows: three blocks, with repeated ids; a zero table row; row ids shared by roles.
  torch::Tensor table = torch::randn({50, 24});
  table[7].zero_();
  const torch::Tensor users = torch::randint(0, 20, {700}, torch::kInt64);
  const torch::Tensor pos = torch::randint(15, 50, {700}, torch::kInt64);
  const torch::Tensor neg = torch::randint(15, 50, {700}, torch::kInt64);
  for (const double reg : {0.0, 0.3}) {
    INFO("reg_weight " << reg);
    check_fused(
        [&](const std::vector<torch::Tensor>& x) {
          return layers::gathered_bpr_loss(x[0], users, pos, neg, reg) * 2.5;
        },
        [&](const std::vector<torch::Tensor>& x) {
          return layers::gathered_bpr_loss_composed(x[0], users, pos, neg, reg) * 2.5;
        },
        {table});
  }
  CHECK_THROWS_AS(layers::gathered_bpr_loss(table, users, pos + 1, neg, 0.1), recbole::Error);
}

TEST_CASE("mean propagation averages layers 0..L", "[models][layers]") {
  layers::SparseMatrix a =
      layers::symmetric_normalized(layers::bipartite_adjacency(3, 3, {1, 2}, {1, 2}, false));
  const layers::GraphOperator op(a, true, cpu());
  const torch::Tensor e = torch::randn({6, 4});
  const torch::Tensor d = dense(a, torch::kFloat32);
  const torch::Tensor expected = (e + torch::mm(d, e) + torch::mm(d, torch::mm(d, e))) / 3;
  CHECK(torch::allclose(layers::mean_propagation(op, e, 2), expected, 1e-6, 1e-6));
}

TEST_CASE("the shared losses follow RecBole's formulas", "[models][layers]") {
  const torch::Tensor pos = torch::tensor({2.0f, 0.5f}), neg = torch::tensor({1.0f, 1.5f});
  const double bpr =
      -(std::log(1e-10 + 1 / (1 + std::exp(-1.0))) + std::log(1e-10 + 1 / (1 + std::exp(1.0)))) / 2;
  CHECK(layers::bpr_loss(pos, neg).item<double>() == Approx(bpr));

  const torch::Tensor a = torch::tensor({{3.0f, 4.0f}}),
                      b = torch::tensor({{1.0f, 0.0f}, {0.0f, 2.0f}});
  // Unsquared norms over the last tensor's rows: (5 + √5) / 2; squared: (25 + 5) / 2 / 2.
  CHECK(layers::emb_loss({a, b}).item<double>() == Approx((5 + std::sqrt(5.0)) / 2));
  CHECK(layers::emb_loss({a, b}, true).item<double>() == Approx(30.0 / 4));

  // InfoNCE: one anchor, two candidates, the positive being the first.
  const torch::Tensor anchor = torch::tensor({{1.0f, 0.0f}});
  const torch::Tensor cands = torch::tensor({{2.0f, 0.0f}, {0.0f, 1.0f}});
  const double tau = 0.5;
  const double expected = -std::log(std::exp(1 / tau) / (std::exp(1 / tau) + std::exp(0.0)));
  const torch::Tensor first = torch::tensor({int64_t{0}});
  CHECK(layers::info_nce_sum(anchor, first, cands, first, tau).item<double>() == Approx(expected));

  const torch::Tensor logits = torch::tensor({{0.0f, std::log(3.0f)}});
  const torch::Tensor x = torch::tensor({{0.0f, 1.0f}});
  CHECK(layers::multinomial_nll(logits, x).item<double>() == Approx(-std::log(0.75)));
}

TEST_CASE("info_nce_sum equals RecBole's InfoNCE written out and has its gradients",
          "[models][layers]") {
  // RecBole's ssl_layer_loss over the batch rows, repeats included: normalised rows,
  // −Σ_b log(exp(a_b·p_b/τ) / Σ_m exp(a_b·c_m/τ)) with a_b = table[ids_b], p_b = c[target_b], the
  // positive's score computed apart from the denominator's product.
  namespace F = torch::nn::functional;
  torch::manual_seed(7);
  const double tau = 0.2;
  const torch::Tensor ids = torch::tensor({3, 0, 3, 2, 1, 3}, torch::kInt64);
  const torch::Tensor targets = torch::tensor({4, 0, 4, 5, 1, 4}, torch::kInt64);
  const torch::Tensor table1 = (0.1 * torch::randn({5, 8})).requires_grad_();
  const torch::Tensor cands1 = (0.1 * torch::randn({6, 8})).requires_grad_();
  const torch::Tensor table2 = table1.detach().clone().requires_grad_();
  const torch::Tensor cands2 = cands1.detach().clone().requires_grad_();
  const torch::Tensor fused = layers::info_nce_sum(table1, ids, cands1, targets, tau);
  fused.backward();
  const torch::Tensor na =
      F::normalize(table2.index_select(0, ids), F::NormalizeFuncOptions().dim(1));
  const torch::Tensor nc = F::normalize(cands2, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor pos = torch::exp((na * nc.index_select(0, targets)).sum(1) / tau);
  const torch::Tensor total = torch::exp(torch::matmul(na, nc.t()) / tau).sum(1);
  const torch::Tensor written = -torch::log(pos / total).sum();
  written.backward();
  CHECK(fused.item<double>() == Approx(written.item<double>()).epsilon(1e-5));
  CHECK(torch::allclose(table1.grad(), table2.grad(), 1e-4, 1e-6));
  CHECK(torch::allclose(cands1.grad(), cands2.grad(), 1e-4, 1e-6));
  CHECK(table1.grad()[3].abs().sum().item<double>() > 0.0);   // the repeated row
  CHECK(table1.grad()[4].abs().sum().item<double>() == 0.0);  // no anchor
  // float64 takes the composed path (CUDA's), with the same counts as weights.
  const torch::Tensor composed = layers::info_nce_sum(
      table2.detach().to(torch::kFloat64), ids, cands2.detach().to(torch::kFloat64), targets, tau);
  CHECK(composed.item<double>() == Approx(written.item<double>()).epsilon(1e-5));
  // A target that is not a function of the id cannot be scored once per id.
  const torch::Tensor mixed = torch::tensor({4, 0, 3, 5, 1, 4}, torch::kInt64);  // id 3: 4 and 3
  CHECK_THROWS_WITH(layers::info_nce_sum(table1, ids, cands1, mixed, tau),
                    Catch::Contains("two rows with the same id have different targets"));
}

TEST_CASE("padded histories are left-aligned, truncated to a random subset", "[models][layers]") {
  recbole::data::InteractionMatrix m(3, 10, {1, 1, 1, 1, 2}, {4, 2, 9, 7, 5});
  layers::PaddedHistory full = layers::padded_history(m);
  REQUIRE(full.ids.sizes() == torch::IntArrayRef({3, 4}));
  CHECK(torch::equal(full.ids[1], torch::tensor({2, 4, 7, 9}, torch::kInt64)));
  CHECK(torch::equal(full.ids[2], torch::tensor({5, 0, 0, 0}, torch::kInt64)));
  CHECK(torch::equal(full.lengths, torch::tensor({0, 4, 1}, torch::kInt64)));
  layers::PaddedHistory cut = layers::padded_history(m, 2, 11);
  REQUIRE(cut.ids.sizes() == torch::IntArrayRef({3, 2}));
  CHECK(cut.lengths[1].item<int64_t>() == 2);
  for (int k = 0; k < 2; ++k)
    CHECK(m.contains(1, static_cast<int32_t>(cut.ids[1][k].item<int64_t>())));

  recbole::data::InteractionMatrix t = layers::transpose(m);
  REQUIRE(t.n_users() == 10);
  CHECK(t.contains(4, 1));
  CHECK(t.contains(5, 2));
  CHECK(t.nnz() == 5);
}

namespace {

// A module that initialises itself in its constructor, before any shared_ptr holds it.
struct SelfInitialised : torch::nn::Module {
  torch::nn::Linear linear{nullptr};
  torch::Tensor user_embedding;
  SelfInitialised() {
    linear = register_module("linear", torch::nn::Linear(4, 3));
    user_embedding = register_parameter("user_embedding", torch::zeros({5, 4}));
    layers::initialize(*this, layers::Init::kXavierNormal);
  }
};

}  // namespace

TEST_CASE(
    "dropout keeps 1 - p of the elements, scaled, repeats with the seed, and its "
    "gradient is the mask",
    "[models][layers]") {
  const torch::Tensor x = torch::full({300, 201}, 2.0).requires_grad_();  // odd count: a half word
  CHECK(layers::dropout(x, 0.3, /*training=*/false).equal(x));
  CHECK(layers::dropout(x, 0.0, /*training=*/true).equal(x));
  CHECK(layers::dropout(x, 1.0, /*training=*/true).abs().sum().item<double>() == 0);
  torch::manual_seed(11);
  const torch::Tensor y = layers::dropout(x, 0.3, /*training=*/true);
  const torch::Tensor kept = y != 0;
  // Kept values are x / (1 − p); the kept share is 1 − p within 4 standard deviations.
  CHECK(torch::allclose(y.masked_select(kept), torch::full({}, 2.0 / 0.7)));
  const double n = static_cast<double>(x.numel()), share = kept.sum().item<double>() / n;
  CHECK(std::abs(share - 0.7) < 4 * std::sqrt(0.7 * 0.3 / n));
  // Each element's draw is its own: the last (odd) element and whole rows vary.
  CHECK(kept.any(1).all().item<bool>());
  CHECK_FALSE(kept.all(1).any().item<bool>());
  torch::manual_seed(11);
  CHECK(layers::dropout(x, 0.3, true).equal(y));
  CHECK_FALSE(layers::dropout(x, 0.3, true).equal(y));  // the generator moved on
  y.sum().backward();
  CHECK(x.grad().equal(kept.to(torch::kFloat32) / 0.7));
}

TEST_CASE("a dropout key scope replaces the generator on its thread and nests",
          "[models][layers]") {
  const torch::Tensor x = torch::ones({64, 33});
  torch::Tensor first;
  {
    const layers::DropoutKeyScope scope(42);
    first = layers::dropout(x, 0.5, true);
    CHECK_FALSE(layers::dropout(x, 0.5, true).equal(first));  // the stream moves on
  }
  torch::manual_seed(3);
  const torch::Tensor from_generator = layers::dropout(x, 0.5, true);
  {
    const layers::DropoutKeyScope outer(42);
    {
      const layers::DropoutKeyScope inner(7);
      CHECK_FALSE(layers::dropout(x, 0.5, true).equal(first));
    }
    CHECK(layers::dropout(x, 0.5, true).equal(first));  // the outer stream, from its start
  }
  torch::manual_seed(3);
  CHECK(layers::dropout(x, 0.5, true).equal(from_generator));  // the generator, untouched
}

TEST_CASE("MultiHeadSelfAttention is libtorch's MultiheadAttention with keyed dropout",
          "[models][layers]") {
  const int64_t width = 16, heads = 4;
  torch::manual_seed(3);
  torch::nn::MultiheadAttention theirs(torch::nn::MultiheadAttentionOptions(width, heads));
  torch::manual_seed(3);
  layers::MultiHeadSelfAttention ours(width, heads, 0.0);
  // The same parameters by name, drawn alike from the same seed.
  const auto mine = ours->named_parameters();
  REQUIRE(mine.size() == theirs->named_parameters().size());
  for (const auto& p : theirs->named_parameters()) {
    INFO(p.key());
    REQUIRE(mine.contains(p.key()));
    CHECK(torch::equal(mine[p.key()], p.value()));
  }
  {  // Perturbed, so that biases that start at zero enter.
    torch::NoGradGuard no_grad;
    for (auto& p : theirs->named_parameters()) {
      p.value().add_(torch::randn_like(p.value()) * 0.1);
      mine[p.key()].copy_(p.value());
    }
  }
  // Outputs and every gradient (a weighted sum of the outputs), batch first against sequence
  // first.
  const torch::Tensor x0 = torch::randn({5, 7, width});
  const torch::Tensor weights = torch::randn({5, 7, width});
  const torch::Tensor x1 = x0.clone().requires_grad_(), x2 = x0.clone().requires_grad_();
  const torch::Tensor out1 = ours->forward(x1);
  const torch::Tensor t = x2.transpose(0, 1);
  const torch::Tensor out2 = std::get<0>(theirs->forward(t, t, t)).transpose(0, 1);
  CHECK(torch::allclose(out1, out2, 1e-5, 1e-6));
  (out1 * weights).sum().backward();
  (out2 * weights).sum().backward();
  CHECK(torch::allclose(x1.grad(), x2.grad(), 1e-4, 1e-6));
  for (const auto& p : theirs->named_parameters()) {
    INFO(p.key());
    CHECK(torch::allclose(mine[p.key()].grad(), p.value().grad(), 1e-4, 1e-6));
  }
  // Dropout: the masks follow the key (as a part's under backward_parts), and only in training.
  layers::MultiHeadSelfAttention dropping(width, heads, 0.5);
  torch::NoGradGuard no_grad;
  auto keyed = [&](uint64_t key) {
    layers::DropoutKeyScope scope(key);
    return dropping->forward(x0);
  };
  CHECK(torch::equal(keyed(7), keyed(7)));
  CHECK_FALSE(torch::allclose(keyed(7), keyed(8)));
  dropping->eval();
  CHECK(torch::equal(keyed(7), keyed(8)));
}

TEST_CASE("models draw their dropout masks through layers::dropout", "[models][layers]") {
  // libtorch's CPU Bernoulli kernel draws a 64-bit word per element: a third of a DeepFM or
  // NeuMF epoch went there (perf) before their MLPs used layers::dropout. A model that calls
  // torch's dropout (or holds a torch::nn::Dropout, or a torch::nn::MultiheadAttention, whose
  // attention dropout is torch's: layers::MultiHeadSelfAttention has its parameters) fails here;
  // layers/dropout.cpp itself hands other devices to torch::dropout. Keyed masks also let a
  // batch's parts train on the pool (layers::backward_parts).
  const std::string offenders =
      recbole::testing::lines_containing({"models"},
                                         {"torch::dropout(", "nn::Dropout", "F::dropout(",
                                          "functional::dropout(", "nn::MultiheadAttention"},
                                         {"dropout.cpp"});
  INFO("torch dropout at: " << offenders);
  REQUIRE(offenders.empty());
}

namespace {

// A loss over four parts of a batch, each through dropout and a shared parameter used twice
// (so that autograd sums inside a part), the fourth part shorter.
struct PartsProblem {
  torch::Tensor w = torch::randn({8, 5}).requires_grad_();
  torch::Tensor b = torch::randn({5}).requires_grad_();
  torch::Tensor unused = torch::randn({3}).requires_grad_();
  torch::Tensor x = torch::randn({27, 8});

  torch::Tensor loss(int64_t k) const {
    const int64_t start = 8 * k, n = std::min<int64_t>(8, x.size(0) - start);
    const torch::Tensor h =
        layers::dropout(torch::tanh(x.narrow(0, start, n).mm(w) + b), 0.4, true);
    return (h.mm(w.t()).pow(2).sum() + b.sum()) / 27.0;
  }
  std::vector<torch::Tensor> params() const { return {w, b, unused}; }
};

}  // namespace

TEST_CASE("backward_parts sums the parts' gradients in order, whatever the thread count",
          "[models][layers]") {
  PartsProblem problem;
  // The reference: each part's backward in turn, keyed as backward_parts keys them (four words
  // drawn from the generator first, one per part).
  torch::manual_seed(5);
  std::vector<uint64_t> keys;
  for (int k = 0; k < 4; ++k) keys.push_back(layers::draw_dropout_key());
  double expected_loss = 0;
  for (int64_t k = 0; k < 4; ++k) {
    const layers::DropoutKeyScope key(keys[static_cast<size_t>(k)]);
    const torch::Tensor loss = problem.loss(k);
    expected_loss += loss.item<double>();
    loss.backward();
  }
  const torch::Tensor expected_w = problem.w.grad().clone(), expected_b = problem.b.grad().clone();
  const torch::Tensor after = torch::randint(1000000, {1});  // where the generator stands

  recbole::ThreadPool& pool = recbole::ThreadPool::instance();
  const int before = pool.threads();
  for (int threads : {1, 2, 3}) {
    pool.set_threads(threads);
    problem.w.mutable_grad() = torch::Tensor();
    problem.b.mutable_grad() = torch::Tensor();
    torch::manual_seed(5);
    int checked = 0;
    const torch::Tensor total = layers::backward_parts(
        problem.params(), 4, [&](int64_t k) { return problem.loss(k); },
        [&](const torch::Tensor&) { ++checked; });
    CHECK(checked == 4);
    CHECK(total.item<double>() == Approx(expected_loss).epsilon(1e-6));
    CHECK(problem.w.grad().equal(expected_w));  // bit for bit: the same sum in the same order
    CHECK(problem.b.grad().equal(expected_b));
    CHECK_FALSE(problem.unused.grad().defined());
    CHECK(torch::randint(1000000, {1}).equal(after));  // the generator advanced as the reference
  }
  pool.set_threads(before);
}

TEST_CASE("backward_parts_coupled gives the whole loss's gradient, rows gathered sparsely",
          "[models][layers]") {
  // Part k: rows of a table gathered by ids (gather_rows: a sparse gradient inside a part),
  // through w; its share is a sum over its rows. The coupling is a Frobenius norm over every
  // part's rows, as RecBole's EmbLoss — not a sum of per-part terms.
  torch::manual_seed(11);
  const torch::Tensor table = torch::randn({40, 6}).requires_grad_();
  const torch::Tensor w = torch::randn({6, 6}).requires_grad_();
  const torch::Tensor unused = torch::randn({2}).requires_grad_();
  const torch::Tensor ids = torch::randint(40, {23}, torch::kInt64);  // repeats included
  const auto part = [&](int64_t k) {
    const int64_t start = 8 * k, n = std::min<int64_t>(8, ids.size(0) - start);
    const torch::Tensor rows = layers::gather_rows(table, ids.narrow(0, start, n));
    const torch::Tensor h = torch::tanh(rows.mm(w));
    return layers::PartForward{h.pow(2).sum() / 23.0, {h, rows}};
  };
  const auto coupling = [](const std::vector<std::vector<torch::Tensor>>& z) {
    std::vector<torch::Tensor> h, rows;
    for (const auto& part : z) h.push_back(part[0]), rows.push_back(part[1]);
    return 0.3 * torch::cat(h).norm() + 0.2 * torch::cat(rows).norm();
  };
  // The reference: the whole loss in one graph, one backward().
  torch::Tensor expected_loss;
  {
    std::vector<std::vector<torch::Tensor>> z;
    torch::Tensor sum = torch::zeros({});
    for (int64_t k = 0; k < 3; ++k) {
      const layers::PartForward f = part(k);
      sum = sum + f.loss;
      z.push_back(f.coupled);
    }
    expected_loss = sum + coupling(z);
    expected_loss.backward();
  }
  CHECK(table.grad().layout() == torch::kStrided);  // outside a part: index_select
  const torch::Tensor expected_table = table.grad().clone(), expected_w = w.grad().clone();

  recbole::ThreadPool& pool = recbole::ThreadPool::instance();
  const int before = pool.threads();
  torch::Tensor first_table;
  for (int threads : {1, 2, 3}) {
    pool.set_threads(threads);
    table.mutable_grad() = torch::full_like(table, 7.0);  // overwritten, not added to
    w.mutable_grad() = torch::Tensor();
    unused.mutable_grad() = torch::ones_like(unused);  // no part reaches it: zeroed
    int checked = 0;
    const torch::Tensor total = layers::backward_parts_coupled(
        {table, w, unused}, 3, part, coupling, [&](const torch::Tensor&) { ++checked; });
    CHECK(checked == 4);  // three parts and the coupling
    CHECK(total.item<double>() == Approx(expected_loss.item<double>()).epsilon(1e-6));
    REQUIRE(table.grad().layout() == torch::kStrided);
    CHECK(torch::allclose(table.grad(), expected_table, 1e-5, 1e-6));
    CHECK(torch::allclose(w.grad(), expected_w, 1e-5, 1e-6));
    CHECK(unused.grad().abs().sum().item<float>() == 0);
    if (!first_table.defined())
      first_table = table.grad().clone();
    else
      CHECK(table.grad().equal(first_table));  // bit for bit, whatever the thread count
  }
  pool.set_threads(before);
}

TEST_CASE("initialize works from a module's own constructor", "[models][layers]") {
  SelfInitialised m;
  CHECK(m.linear->bias.abs().sum().item<float>() == 0);
  CHECK(m.user_embedding.abs().sum().item<float>() > 0);  // the table was drawn
  CHECK(m.linear->weight.std().item<float>() > 0);
}

namespace {

// A feature schema with every field type: two token fields, a token_seq, a numerical float and
// a numerical float_seq field.
recbole::data::FeatureSchema all_field_types() {
  using recbole::data::FeatureSpec;
  using recbole::data::FieldType;
  recbole::data::FeatureSchema schema;
  auto spec = [](std::string name, FieldType type, int64_t num, int64_t len) {
    FeatureSpec f;
    f.name = std::move(name);
    f.type = type;
    f.num = num;
    f.seq_len = len;
    f.numerical = type == FieldType::kFloat || type == FieldType::kFloatSeq;
    return f;
  };
  schema.fields = {
      spec("user_id", FieldType::kToken, 7, 0), spec("item_id", FieldType::kToken, 9, 0),
      spec("genres", FieldType::kTokenSeq, 6, 4), spec("price", FieldType::kFloat, 2, 0),
      spec("scores", FieldType::kFloatSeq, 2, 3),
      // Discretised: bucket ids 0..4 and 1..3 (sequence padding 0).
      spec("rank", FieldType::kFloat, 5, 0), spec("levels", FieldType::kFloatSeq, 4, 2)};
  schema.fields[5].discretised = schema.fields[6].discretised = true;
  return schema;
}

// A batch of `b` random rows of all_field_types(), with padding (and an all-padding row) in
// the sequence fields.
recbole::data::Batch random_feature_batch(int64_t b) {
  recbole::data::Batch batch;
  batch.users = torch::randint(0, 7, {b}, torch::kInt64);
  batch.labels = torch::randint(0, 2, {b}).to(torch::kFloat32);
  batch.features["user_id"] = batch.users;
  batch.features["item_id"] = torch::randint(0, 9, {b}, torch::kInt64);
  torch::Tensor genres = torch::randint(0, 6, {b, 4}, torch::kInt64);
  genres[0].zero_();
  batch.features["genres"] = genres;
  batch.features["price"] = torch::randn({b});
  torch::Tensor scores = torch::zeros({b, 3, 2});
  for (int64_t r = 1; r < b; ++r)
    for (int64_t j = 0; j < 1 + r % 3; ++j) {
      scores[r][j][0] = torch::randn({}).item<float>();
      scores[r][j][1] = 1.0f;
    }
  batch.features["scores"] = scores;
  batch.features["rank"] = torch::randint(0, 5, {b}, torch::kInt64);
  torch::Tensor levels = torch::zeros({b, 2, 2});
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < r % 3; ++j) {
      levels[r][j][0] = 1.0f;
      levels[r][j][1] = static_cast<float>(1 + (r + j) % 3);
    }
  batch.features["levels"] = levels;
  return batch;
}

// The gradients of `tables` (zeros where undefined), concatenated.
torch::Tensor gradients(const std::vector<torch::Tensor>& tables) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : tables)
    out.push_back(t.grad().defined() ? t.grad().flatten() : torch::zeros({t.numel()}));
  return torch::cat(out);
}

}  // namespace

TEST_CASE("the context embedding's direct path equals its autograd forward and backward",
          "[models][layers][context]") {
  torch::manual_seed(7);
  const layers::ContextFields fields(all_field_types());
  REQUIRE(fields.size() == 7);
  const int64_t b = 37, d = 4;
  const recbole::data::Batch batch = random_feature_batch(b);
  layers::ContextEmbedding embedding(fields, d);
  const torch::Tensor e = embedding->forward(batch);  // [B, F, d]

  // E's order: genres, user_id, item_id, scores, levels, price, rank. A discretised field is
  // its bucket's row (rank: float table rows 2.. after price's 2); a value is value × row 1.
  const torch::Tensor float_table = embedding->tables()[1];
  CHECK(torch::equal(e.select(1, 6), float_table.index_select(0, batch.features.at("rank") + 2)));
  CHECK(torch::allclose(e.select(1, 5),
                        batch.features.at("price").unsqueeze(1) * float_table[1].unsqueeze(0)));
  // levels: the mean of its buckets' rows (row 5, two elements: buckets 3 and 1).
  const torch::Tensor levels_table = embedding->tables()[4];
  CHECK(torch::allclose(e[5][4], (levels_table[3] + levels_table[1]) / 2, 1e-5, 1e-6));
  CHECK(torch::equal(e[0][4], torch::zeros({d})));  // no element

  torch::Tensor direct = torch::empty({b, 7, d});
  embedding->forward_direct(batch, direct.data_ptr<float>());
  CHECK(torch::allclose(direct, e.detach(), 1e-5, 1e-6));
  torch::Tensor sum = torch::empty({b, d});
  embedding->sum_direct(batch, sum.data_ptr<float>());
  CHECK(torch::allclose(sum, e.detach().sum(1), 1e-5, 1e-6));

  // Per-field gradients.
  const torch::Tensor g = torch::randn({b, 7, d});
  (e * g).sum().backward();
  const torch::Tensor autograd = gradients(embedding->tables());
  REQUIRE(autograd.abs().sum().item<float>() > 0.0f);
  for (torch::Tensor t : embedding->tables()) t.mutable_grad() = torch::Tensor();
  embedding->add_gradient(batch, g.data_ptr<float>());
  CHECK(torch::allclose(gradients(embedding->tables()), autograd, 1e-5, 1e-6));

  // One gradient row shared by every field.
  const torch::Tensor shared = torch::randn({b, d});
  for (torch::Tensor t : embedding->tables()) t.mutable_grad() = torch::Tensor();
  (embedding->forward(batch) * shared.unsqueeze(1)).sum().backward();
  const torch::Tensor autograd_shared = gradients(embedding->tables());
  for (torch::Tensor t : embedding->tables()) t.mutable_grad() = torch::Tensor();
  embedding->add_gradient(batch, shared.data_ptr<float>(), /*shared_by_fields=*/true);
  CHECK(torch::allclose(gradients(embedding->tables()), autograd_shared, 1e-5, 1e-6));

  // The first-order part (token_seq summed, not averaged) and its bias.
  layers::FirstOrderLinear first(fields);
  {
    torch::NoGradGuard no_grad;
    first->named_parameters()["bias"].fill_(0.25);
  }
  const torch::Tensor z = first->forward(batch).squeeze(1);  // [B]
  torch::Tensor z_direct = torch::empty({b});
  first->forward_direct(batch, z_direct.data_ptr<float>());
  CHECK(torch::allclose(z_direct, z.detach(), 1e-5, 1e-6));
  const torch::Tensor dz = torch::randn({b});
  (z * dz).sum().backward();
  std::vector<torch::Tensor> params = first->parameters();
  const torch::Tensor first_autograd = gradients(params);
  for (torch::Tensor& p : params) p.mutable_grad() = torch::Tensor();
  first->add_gradient(batch, dz.data_ptr<float>());
  CHECK(torch::allclose(gradients(params), first_autograd, 1e-5, 1e-6));
}

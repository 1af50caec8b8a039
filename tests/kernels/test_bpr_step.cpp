// kernels/bpr_step.h against libtorch: the loss, its derivative and the embedding gradients of
// the composed expression −mean log(1e−10 + σ(⟨u,i⁺⟩ − ⟨u,i⁻⟩)) (models/general/bpr.cpp) in
// double precision, and a few whole steps (score, gather, update) against autograd with
// torch::optim's Adam and SGD and with SparseAdam written out in double precision. The steps
// run the way the fused trainer (models/general/bpr_fused.cpp) runs them, on ThreadPools of 1,
// 2 and 3 workers, and must give bit-identical weights on each, with or without the stashes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <torch/torch.h>

#include "kernels/bpr_step.h"
#include "recbole/utils/thread_pool.h"

namespace {

namespace bpr = recbole::kernels::bpr;
using recbole::ThreadPool;

// Sets the pool's size for a scope and restores the size the rest of the binary expects.
struct StepPoolSize {
  explicit StepPoolSize(int threads) : before(ThreadPool::instance().threads()) {
    ThreadPool::instance().set_threads(threads);
  }
  ~StepPoolSize() { ThreadPool::instance().set_threads(before); }
  int before;
};

constexpr int64_t kUsers = 150, kItems = 230;  // over two 64-row blocks each, for 2 or 3 workers

struct Samples {
  std::vector<int64_t> users, pos, neg;
  int64_t size() const { return static_cast<int64_t>(users.size()); }
};

// b samples with repeated users and items (a row's gradient sums several samples). With
// `same_row`, sample 3's positive and negative item are the same row (its two terms cancel);
// without, no sample's are: Adam's first steps move a row by ±lr whatever the size of its
// gradient, and a gradient that is rounding noise would have a random sign.
Samples random_samples(std::mt19937& gen, int64_t b, bool same_row) {
  std::uniform_int_distribution<int64_t> user(0, kUsers - 1), item(0, kItems - 1);
  Samples s;
  for (int64_t r = 0; r < b; ++r) {
    s.users.push_back(user(gen));
    s.pos.push_back(item(gen));
    int64_t neg = item(gen);
    while (!same_row && neg == s.pos.back()) neg = item(gen);
    s.neg.push_back(same_row && r == 3 ? s.pos.back() : neg);
  }
  return s;
}

std::vector<float> random_table(std::mt19937& gen, int64_t rows, int64_t d) {
  std::normal_distribution<float> normal(0.f, 0.3f);
  std::vector<float> t(static_cast<size_t>(rows * d));
  for (float& x : t) x = normal(gen);
  return t;
}

enum class Update { kDenseAdam, kLazyAdam, kSgd, kSgdDecay };

// The state the fused trainer keeps: parameters, moments, the slot of every row.
struct StepState {
  int64_t d = 0;
  std::vector<float> U, I, m_u, v_u, m_i, v_i;
  std::vector<int32_t> slot_u, slot_i;
  StepState(const std::vector<float>& u, const std::vector<float>& i, int64_t dim)
      : d(dim),
        U(u),
        I(i),
        m_u(u.size()),
        v_u(u.size()),
        m_i(i.size()),
        v_i(i.size()),
        slot_u(kUsers, -1),
        slot_i(kItems, -1) {}
};

// What one step produced besides the new weights.
struct StepResult {
  double loss = 0;                    // the batch's mean loss
  std::vector<float> dx;              // [b]
  std::vector<float> grad_u, grad_i;  // dense [rows, d] gradients assembled from the slots
  int misplaced = 0;                  // rows a worker gathered without owning them, or twice
};

constexpr double kLr = 0.01, kSgdLr = 0.5, kWd = 0.01, kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;

// One step through the kernels, as FusedBprTrainer::train_epoch runs it on the current pool.
StepResult kernel_step(StepState& s, const Samples& batch, Update update, int64_t step,
                       bool stash) {
  const int64_t b = batch.size(), d = s.d;
  const int workers = ThreadPool::instance().threads();
  StepResult out;
  out.dx.resize(static_cast<size_t>(b));
  std::vector<float> user_stash, diff_stash;
  if (stash) {
    user_stash.resize(static_cast<size_t>(b * d));
    diff_stash.resize(static_cast<size_t>(b * d));
  }
  const int64_t chunks = (b + bpr::kMaxChunk - 1) / bpr::kMaxChunk;
  std::vector<double> chunk_loss(static_cast<size_t>(chunks));
  recbole::parallel_for_blocks(b, bpr::kMaxChunk, [&](int64_t c, int64_t lo, int64_t hi) {
    chunk_loss[static_cast<size_t>(c)] =
        bpr::score_chunk(s.U.data(), s.I.data(), batch.users.data(), batch.pos.data(),
                         batch.neg.data(), lo, hi, d, 1.f / static_cast<float>(b), out.dx.data(),
                         stash ? user_stash.data() : nullptr, stash ? diff_stash.data() : nullptr);
  });
  for (double l : chunk_loss) out.loss += l;
  out.loss /= static_cast<double>(b);

  struct Scratch {
    std::vector<int32_t> touched_u, touched_i;
    std::vector<float> grads_u, grads_i;
    std::vector<bpr::Contribution> list_u, list_i;
    bpr::RowGradients ug{}, ig{};
  };
  std::vector<Scratch> scratch(static_cast<size_t>(workers));
  out.grad_u.assign(s.U.size(), 0.f);
  out.grad_i.assign(s.I.size(), 0.f);
  std::vector<int> misplaced(static_cast<size_t>(workers), 0);
  const double bc1 = 1 - std::pow(kB1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(kB2, static_cast<double>(step));
  ThreadPool::instance().run_phases(2, [&](int w, int phase) {
    Scratch& ws = scratch[static_cast<size_t>(w)];
    if (phase == 0) {
      ws.touched_u.resize(static_cast<size_t>(b));
      ws.touched_i.resize(static_cast<size_t>(2 * b));
      ws.grads_u.resize(static_cast<size_t>(b * d));
      ws.grads_i.resize(static_cast<size_t>(2 * b * d));
      ws.list_u.resize(static_cast<size_t>(b + 1));
      ws.list_i.resize(static_cast<size_t>(2 * b + 1));
      ws.ug = {s.slot_u.data(), ws.touched_u.data(), ws.grads_u.data(), 0};
      ws.ig = {s.slot_i.data(), ws.touched_i.data(), ws.grads_i.data(), 0};
      bpr::gather_gradients(
          w, workers, s.U.data(), s.I.data(), batch.users.data(), batch.pos.data(),
          batch.neg.data(), b, out.dx.data(), stash ? user_stash.data() : nullptr,
          stash ? diff_stash.data() : nullptr, d, ws.ug, ws.ig, ws.list_u.data(), ws.list_i.data());
      // Each worker writes only its own rows of the dense gradients.
      for (auto [g, dense] : {std::pair{&ws.ug, &out.grad_u}, std::pair{&ws.ig, &out.grad_i}}) {
        std::set<int32_t> seen;
        for (int64_t k = 0; k < g->n_touched; ++k) {
          const int32_t row = g->touched[k];
          if (!bpr::owns_row(row, w, workers) || !seen.insert(row).second ||
              g->slot[row] != static_cast<int32_t>(k))
            ++misplaced[static_cast<size_t>(w)];
          std::copy_n(g->grads + k * d, d, dense->data() + row * d);
        }
      }
      return;
    }
    recbole::kernels::AdamConsts c;
    c.b1 = static_cast<float>(kB1);
    c.b2 = static_cast<float>(kB2);
    c.eps = static_cast<float>(kEps);
    c.wd = update == Update::kDenseAdam ? static_cast<float>(kWd) : 0.f;
    c.step_size =
        static_cast<float>(update == Update::kDenseAdam ? kLr / bc1 : kLr * std::sqrt(bc2) / bc1);
    c.inv_sqrt_bc2 = update == Update::kDenseAdam ? static_cast<float>(1 / std::sqrt(bc2)) : 1.f;
    struct Table {
      float *P, *M, *V;
      int64_t rows;
      const bpr::RowGradients* g;
    };
    for (const Table t : {Table{s.U.data(), s.m_u.data(), s.v_u.data(), kUsers, &ws.ug},
                          Table{s.I.data(), s.m_i.data(), s.v_i.data(), kItems, &ws.ig}}) {
      const int64_t first = bpr::kRowBlock * w, stride = bpr::kRowBlock * workers;
      switch (update) {
        case Update::kSgd:
          bpr::sgd_sparse_update(t.P, t.g->touched, t.g->n_touched, t.g->grads, d,
                                 static_cast<float>(kSgdLr));
          break;
        case Update::kLazyAdam:
          bpr::lazy_adam_update(t.P, t.M, t.V, t.g->touched, t.g->n_touched, t.g->grads, d, c);
          break;
        case Update::kSgdDecay:
          for (int64_t lo = first; lo < t.rows; lo += stride)
            bpr::sgd_dense_update(t.P, t.g->slot, lo, std::min(t.rows, lo + bpr::kRowBlock),
                                  t.g->grads, d, static_cast<float>(kSgdLr),
                                  static_cast<float>(kWd));
          break;
        case Update::kDenseAdam:
          for (int64_t lo = first; lo < t.rows; lo += stride)
            bpr::dense_adam_update(t.P, t.M, t.V, t.g->slot, lo,
                                   std::min(t.rows, lo + bpr::kRowBlock), t.g->grads, d, c);
          break;
      }
    }
  });
  for (const Scratch& ws : scratch) {
    for (int64_t k = 0; k < ws.ug.n_touched; ++k) s.slot_u[ws.touched_u[k]] = -1;
    for (int64_t k = 0; k < ws.ig.n_touched; ++k) s.slot_i[ws.touched_i[k]] = -1;
  }
  for (int m : misplaced) out.misplaced += m;
  return out;
}

torch::Tensor from_vector(const std::vector<float>& v, int64_t rows, int64_t d) {
  return torch::tensor(v, torch::kFloat32).view({rows, d});
}

torch::Tensor ids(const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); }

// The loss as models/general/bpr.cpp composes it; *x gets the score differences (for dx).
torch::Tensor reference_loss(const torch::Tensor& U, const torch::Tensor& I, const Samples& s,
                             torch::Tensor* x = nullptr) {
  const torch::Tensor u = U.index_select(0, ids(s.users));
  const torch::Tensor pos = (u * I.index_select(0, ids(s.pos))).sum(1);
  const torch::Tensor neg = (u * I.index_select(0, ids(s.neg))).sum(1);
  torch::Tensor diff = pos - neg;
  if (x != nullptr) {
    diff.retain_grad();
    *x = diff;
  }
  return -torch::log(1e-10 + torch::sigmoid(diff)).mean();
}

}  // namespace

TEST_CASE("score_chunk and gather_gradients give the loss and gradients of libtorch's BPR loss",
          "[kernels][bpr]") {
  for (const int64_t d : {64, 20}) {  // the unrolled 64-wide rows, and a width with a tail
    std::mt19937 gen(static_cast<unsigned>(31 + d));
    const std::vector<float> U = random_table(gen, kUsers, d), I = random_table(gen, kItems, d);
    const Samples batch = random_samples(gen, 700, true);  // two chunks: 512 + 188

    // Reference in double precision: loss, d loss / d x, d loss / d U and d loss / d I.
    const torch::Tensor u_ref = from_vector(U, kUsers, d).to(torch::kFloat64).requires_grad_();
    const torch::Tensor i_ref = from_vector(I, kItems, d).to(torch::kFloat64).requires_grad_();
    torch::Tensor x;
    const torch::Tensor loss = reference_loss(u_ref, i_ref, batch, &x);
    loss.backward();

    std::vector<StepResult> runs;
    for (const int threads : {1, 2, 3}) {
      for (const bool stash : {false, true}) {
        StepPoolSize pool(threads);
        StepState s(U, I, d);
        runs.push_back(kernel_step(s, batch, Update::kSgd, 1, stash));
        INFO("d " << d << ", threads " << threads << ", stash " << stash);
        const StepResult& r = runs.back();
        CHECK(r.misplaced == 0);
        CHECK(r.loss == Approx(loss.item<double>()).epsilon(1e-6));
        CHECK(torch::allclose(torch::tensor(r.dx, torch::kFloat32).to(torch::kFloat64), x.grad(),
                              1e-5, 1e-9));
        CHECK(torch::allclose(from_vector(r.grad_u, kUsers, d).to(torch::kFloat64), u_ref.grad(),
                              1e-4, 1e-8));
        CHECK(torch::allclose(from_vector(r.grad_i, kItems, d).to(torch::kFloat64), i_ref.grad(),
                              1e-4, 1e-8));
        // Every slot is free again, as the next step expects.
        CHECK(std::count(s.slot_u.begin(), s.slot_u.end(), -1) == kUsers);
        CHECK(std::count(s.slot_i.begin(), s.slot_i.end(), -1) == kItems);
      }
    }
    // The same bits whatever the pool size and the way of gathering.
    for (size_t k = 1; k < runs.size(); ++k) {
      INFO("d " << d << ", run " << k);
      CHECK(runs[k].loss == runs[0].loss);
      CHECK(runs[k].dx == runs[0].dx);
      CHECK(runs[k].grad_u == runs[0].grad_u);
      CHECK(runs[k].grad_i == runs[0].grad_i);
    }
  }
}

TEST_CASE("score_chunk returns NaN when a score is not finite", "[kernels][bpr]") {
  const int64_t d = 8;
  std::vector<float> U(static_cast<size_t>(2 * d), 0.5f), I(static_cast<size_t>(3 * d), 0.25f);
  const std::vector<int64_t> users = {0, 1}, pos = {0, 1}, neg = {2, 2};
  std::vector<float> dx(2);
  CHECK(std::isfinite(bpr::score_chunk(U.data(), I.data(), users.data(), pos.data(), neg.data(), 0,
                                       2, d, 0.5f, dx.data(), nullptr, nullptr)));
  U[static_cast<size_t>(d + 3)] = std::numeric_limits<float>::infinity();  // user 1
  CHECK(std::isnan(bpr::score_chunk(U.data(), I.data(), users.data(), pos.data(), neg.data(), 0, 2,
                                    d, 0.5f, dx.data(), nullptr, nullptr)));
}

TEST_CASE("BPR steps through the kernels follow autograd and torch::optim on any pool size",
          "[kernels][bpr]") {
  constexpr int kSteps = 3;
  const int64_t d = 64;
  std::mt19937 gen(41);
  const std::vector<float> u_start = random_table(gen, kUsers, d),
                           i_start = random_table(gen, kItems, d);
  std::vector<Samples> batches;
  for (int k = 0; k < kSteps; ++k) batches.push_back(random_samples(gen, 300, false));

  for (const Update update :
       {Update::kDenseAdam, Update::kLazyAdam, Update::kSgd, Update::kSgdDecay}) {
    // Reference: autograd on the composed loss, then torch::optim's Adam or SGD on float32
    // tensors; SparseAdam in double (its moments and step on the rows each batch uses).
    const bool lazy = update == Update::kLazyAdam;
    const auto dtype = lazy ? torch::kFloat64 : torch::kFloat32;
    std::vector<torch::Tensor> params = {
        from_vector(u_start, kUsers, d).to(dtype).requires_grad_(),
        from_vector(i_start, kItems, d).to(dtype).requires_grad_()};
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    if (update == Update::kDenseAdam)
      optimizer = std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(kLr).betas({kB1, kB2}).eps(kEps).weight_decay(kWd));
    else if (update == Update::kSgd)
      optimizer = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(kSgdLr));
    else if (update == Update::kSgdDecay)
      optimizer = std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(kSgdLr).weight_decay(kWd));
    std::vector<torch::Tensor> m = {torch::zeros_like(params[0]), torch::zeros_like(params[1])};
    std::vector<torch::Tensor> v = {torch::zeros_like(params[0]), torch::zeros_like(params[1])};
    std::vector<double> ref_losses;
    for (int step = 1; step <= kSteps; ++step) {
      const Samples& batch = batches[static_cast<size_t>(step - 1)];
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      const torch::Tensor loss = reference_loss(params[0], params[1], batch);
      loss.backward();
      ref_losses.push_back(loss.item<double>());
      if (!lazy) {
        optimizer->step();
        continue;
      }
      torch::NoGradGuard no_grad;
      const double bc1 = 1 - std::pow(kB1, step), bc2 = 1 - std::pow(kB2, step);
      const torch::Tensor rows[2] = {
          std::get<0>(torch::_unique(ids(batch.users))),
          std::get<0>(torch::_unique(torch::cat({ids(batch.pos), ids(batch.neg)})))};
      for (int t = 0; t < 2; ++t) {
        const torch::Tensor g = params[t].grad().index_select(0, rows[t]);
        const torch::Tensor mt = kB1 * m[t].index_select(0, rows[t]) + (1 - kB1) * g;
        const torch::Tensor vt = kB2 * v[t].index_select(0, rows[t]) + (1 - kB2) * g * g;
        m[t].index_copy_(0, rows[t], mt);
        v[t].index_copy_(0, rows[t], vt);
        params[t].index_add_(0, rows[t], -(kLr * std::sqrt(bc2) / bc1) * mt / (vt.sqrt() + kEps));
      }
    }

    std::vector<StepState> finals;
    for (const int threads : {1, 2, 3}) {
      for (const bool stash : {false, true}) {
        StepPoolSize pool(threads);
        StepState s(u_start, i_start, d);
        INFO("update " << static_cast<int>(update) << ", threads " << threads << ", stash "
                       << stash);
        for (int step = 1; step <= kSteps; ++step) {
          const StepResult r =
              kernel_step(s, batches[static_cast<size_t>(step - 1)], update, step, stash);
          CHECK(r.misplaced == 0);
          CHECK(r.loss == Approx(ref_losses[static_cast<size_t>(step - 1)]).epsilon(1e-6));
        }
        CHECK(
            torch::allclose(from_vector(s.U, kUsers, d).to(dtype), params[0].detach(), 1e-4, 1e-6));
        CHECK(
            torch::allclose(from_vector(s.I, kItems, d).to(dtype), params[1].detach(), 1e-4, 1e-6));
        finals.push_back(std::move(s));
      }
    }
    // Bit-identical for every pool size and either way of gathering.
    for (size_t k = 1; k < finals.size(); ++k) {
      INFO("update " << static_cast<int>(update) << ", run " << k);
      CHECK(finals[k].U == finals[0].U);
      CHECK(finals[k].I == finals[0].I);
      CHECK(finals[k].m_u == finals[0].m_u);
      CHECK(finals[k].v_i == finals[0].v_i);
    }
    // The steps moved the weights, and sparse updates left the rows no batch used alone.
    CHECK(finals[0].I != i_start);
    if (update == Update::kSgd || update == Update::kLazyAdam) {
      std::set<int64_t> used(batches[0].pos.begin(), batches[0].pos.end());
      for (const Samples& b : batches) {
        used.insert(b.pos.begin(), b.pos.end());
        used.insert(b.neg.begin(), b.neg.end());
      }
      for (int64_t row = 0; row < kItems; ++row) {
        if (used.count(row) != 0) continue;
        CHECK(std::equal(i_start.begin() + row * d, i_start.begin() + (row + 1) * d,
                         finals[0].I.begin() + row * d));
      }
    }
  }
}

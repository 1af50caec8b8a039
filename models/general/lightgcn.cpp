#include "models/general/lightgcn.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "kernels/simd.h"
#include "models/layers/init.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

LightGCN::LightGCN(const ModelContext& ctx)
    : CachedFactorModel("LightGCN", ctx),
      adjacency_(layers::symmetric_normalized(layers::bipartite_adjacency(ctx.train)),
                 /*symmetric=*/true, ctx.device),
      n_layers_(ctx.config.get_int("n_layers")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      require_pow_(ctx.config.get_bool("require_pow")) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierUniform);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierUniform);
}

std::pair<torch::Tensor, torch::Tensor> LightGCN::propagate() const {
  torch::Tensor all = layers::mean_propagation(
      adjacency_, torch::cat({user_embedding_, item_embedding_}), n_layers_);
  return {all.slice(0, 0, n_users()), all.slice(0, n_users())};
}

torch::Tensor LightGCN::calculate_loss(const data::Batch& batch) {
  drop_factors();
  auto [users, items] = propagate();
  torch::Tensor u = users.index_select(0, batch.users);
  torch::Tensor pos = (u * items.index_select(0, batch.items)).sum(1);
  torch::Tensor neg = (u * items.index_select(0, batch.neg_items)).sum(1);
  torch::Tensor reg = layers::emb_loss(
      {user_embedding_.index_select(0, batch.users), item_embedding_.index_select(0, batch.items),
       item_embedding_.index_select(0, batch.neg_items)},
      require_pow_);
  return layers::bpr_loss(pos, neg) + reg_weight_ * reg;
}

std::pair<torch::Tensor, torch::Tensor> LightGCN::evaluation_factors() { return propagate(); }

torch::Tensor LightGCN::train_step(const data::Batch& batch, TrainStep& step) {
  if (!direct_step_applies()) return CachedFactorModel::train_step(batch, step);
  step.optimizer().zero_grad();
  torch::Tensor loss = direct_backward(batch);
  step.finish_gradients();
  step.optimizer().step();
  return loss;
}

bool LightGCN::direct_step_applies() const {
  return fast_paths_enabled() && !adjacency_.device_tensor().defined() &&
         user_embedding_.is_cpu() && item_embedding_.is_cpu() &&
         user_embedding_.scalar_type() == torch::kFloat32 &&
         item_embedding_.scalar_type() == torch::kFloat32;
}

namespace {

// out[j] += s · x[j]
void lightgcn_axpy(float* __restrict out, const float* __restrict x, float s, int64_t d) {
  for (int64_t j = 0; j < d; ++j) out[j] += s * x[j];
}

// What one step of LightGCN::direct_backward works on. Node rows are [users; items]
// (N = n_users + n_items), row-major [N, d] float32.
struct LightGCNStep {
  const layers::SparseMatrix *adj, *adj_t;
  int64_t n_users, d, n_layers;
  float divisor;                       // n_layers + 1: the mean's
  const float *ego_users, *ego_items;  // the tables
  const int64_t *users, *pos, *neg;    // the batch's ids
  int64_t b;
  float *ego, *mean, *g;           // E; mean_l Â^l E; ∂loss/∂mean / (L + 1)
  float* layer[2];                 // the layers' rows, alternately
  float *row_dx, *row_terms;       // [B]; [B, 4]: BPR loss and three squared norms
  float *grad_users, *grad_items;  // the tables' gradients
  bool squared;                    // require_pow
  double reg_scale;                // reg_weight / B
};

// Phase 0, rows [first, last): E's rows from the two tables.
void lightgcn_copy_ego(const LightGCNStep& s, int64_t first, int64_t last) {
  const int64_t split = s.n_users;
  for (int64_t r = first; r < last; ++r) {
    const float* src = r < split ? s.ego_users + r * s.d : s.ego_items + (r - split) * s.d;
    std::copy(src, src + s.d, s.ego + r * s.d);
  }
}

// Layer l's rows: Â times layer l − 1 (E for l = 0), and the running sum of the layers, divided
// by L + 1 at the last: (E + ÂE) + Â²E …, as autograd's mean over the stacked layers.
void lightgcn_forward_layer(const LightGCNStep& s, int64_t l, int64_t first, int64_t last) {
  const float* in = l == 0 ? s.ego : s.layer[(l - 1) % 2];
  float* out = s.layer[l % 2];
  layers::spmm_rows(*s.adj, in, out, s.d, first, last);
  const float* sum = l == 0 ? s.ego : s.mean;
  const bool last_layer = l + 1 == s.n_layers;
  for (int64_t k = first * s.d; k < last * s.d; ++k)
    s.mean[k] = last_layer ? (sum[k] + out[k]) / s.divisor : sum[k] + out[k];
}

// Batch rows [first, last): x = s⁺ − s⁻ on the final rows, the row's loss −log(1e−10 + σ(x)),
// dloss/dx over the batch mean, and the squared norms of its three layer-0 rows.
void lightgcn_bpr_rows(const LightGCNStep& s, int64_t first, int64_t last) {
  const int64_t d = s.d;
  for (int64_t k = first; k < last; ++k) {
    const float* fu = s.mean + s.users[k] * d;
    const float x = simd::dot(fu, s.mean + (s.n_users + s.pos[k]) * d, d) -
                    simd::dot(fu, s.mean + (s.n_users + s.neg[k]) * d, d);
    const float sigma = 1.0f / (1.0f + std::exp(-x));
    // d/dx −log(1e−10 + σ(x)) = −σ(1 − σ) / (1e−10 + σ).
    s.row_dx[k] = -sigma * (1.0f - sigma) / (1e-10f + sigma) / static_cast<float>(s.b);
    float* terms = s.row_terms + 4 * k;
    terms[0] = -std::log(1e-10f + sigma);
    const float* rows[3] = {s.ego_users + s.users[k] * d, s.ego_items + s.pos[k] * d,
                            s.ego_items + s.neg[k] * d};
    for (int j = 0; j < 3; ++j) terms[1 + j] = simd::dot(rows[j], rows[j], d);
  }
}

// Rows [first, last) of G: BPR's gradient on the final rows, its terms added in batch order
// (a negative may equal the positive: one axpy per term, each of which vectorises), / (L + 1).
void lightgcn_scatter_bpr(const LightGCNStep& s, int64_t first, int64_t last) {
  const int64_t d = s.d;
  const auto mine = [&](int64_t r) { return r >= first && r < last; };
  std::fill(s.g + first * d, s.g + last * d, 0.0f);
  for (int64_t k = 0; k < s.b; ++k) {
    const int64_t u = s.users[k], p = s.n_users + s.pos[k], q = s.n_users + s.neg[k];
    const float dx = s.row_dx[k];
    if (mine(u)) {
      lightgcn_axpy(s.g + u * d, s.mean + p * d, dx, d);
      lightgcn_axpy(s.g + u * d, s.mean + q * d, -dx, d);
    }
    if (mine(p)) lightgcn_axpy(s.g + p * d, s.mean + u * d, dx, d);
    if (mine(q)) lightgcn_axpy(s.g + q * d, s.mean + u * d, -dx, d);
  }
  for (int64_t k = first * d; k < last * d; ++k) s.g[k] /= s.divisor;
}

// Σ over the batch rows, in row order, of the norm terms' squares: [users, positives, negatives].
void lightgcn_squares(const LightGCNStep& s, double squares[3]) {
  squares[0] = squares[1] = squares[2] = 0.0;
  for (int64_t k = 0; k < s.b; ++k)
    for (int j = 0; j < 3; ++j) squares[j] += s.row_terms[4 * k + 1 + j];
}

// EmbLoss's value Σ‖X‖ (Σ‖X‖² / 2 when squared) from the squares, and, when `scales` is given,
// the factor of each block's rows in its gradient, reg_scale included: ∂‖X‖/∂X = X / ‖X‖ (zero
// at X = 0, as autograd's norm), ∂(‖X‖²/2)/∂X = X.
double lightgcn_norms(const LightGCNStep& s, const double squares[3], float* scales) {
  double reg = 0.0;
  for (int j = 0; j < 3; ++j) {
    const double norm = std::sqrt(squares[j]);
    reg += s.squared ? squares[j] / 2.0 : norm;
    if (scales)
      scales[j] = static_cast<float>(s.squared    ? s.reg_scale
                                     : norm > 0.0 ? s.reg_scale / norm
                                                  : 0.0);
  }
  return reg;
}

// Backward layer l (Horner, the chain autograd walks): h = G + Âᵀh, h = G at the start. The
// last writes the tables' gradients: h plus the norm term's gradient on the batch rows.
void lightgcn_backward_layer(const LightGCNStep& s, int64_t l, int64_t first, int64_t last) {
  const int64_t d = s.d;
  const float* in = l == 0 ? s.g : s.layer[(l - 1) % 2];
  float* h = s.layer[l % 2];
  layers::spmm_rows(*s.adj_t, in, h, d, first, last);
  for (int64_t k = first * d; k < last * d; ++k) h[k] += s.g[k];
  if (l + 1 < s.n_layers) return;
  const int64_t split = s.n_users;
  for (int64_t r = first; r < last; ++r)
    std::copy(h + r * d, h + (r + 1) * d,
              r < split ? s.grad_users + r * d : s.grad_items + (r - split) * d);
  double squares[3];  // every worker sums them itself: 3B adds, cheaper than one more phase
  float scales[3];
  lightgcn_squares(s, squares);
  lightgcn_norms(s, squares, scales);
  const auto mine = [&](int64_t r) { return r >= first && r < last; };
  for (int64_t k = 0; k < s.b; ++k) {  // users, positives, then negatives, each in batch order
    if (mine(s.users[k]))
      lightgcn_axpy(s.grad_users + s.users[k] * d, s.ego_users + s.users[k] * d, scales[0], d);
    if (mine(split + s.pos[k]))
      lightgcn_axpy(s.grad_items + s.pos[k] * d, s.ego_items + s.pos[k] * d, scales[1], d);
  }
  for (int64_t k = 0; k < s.b; ++k)
    if (mine(split + s.neg[k]))
      lightgcn_axpy(s.grad_items + s.neg[k] * d, s.ego_items + s.neg[k] * d, scales[2], d);
}

}  // namespace

// One pool job of 2L + 3 phases (L = n_layers ≥ 1, the key's bound), with a spinning barrier
// between phases: a job per product and per element-wise pass cost more than the passes on
// ml-100k. Worker w owns the node rows of its share of a product's non-zeros
// (layers::balanced_rows) and does every element-wise pass and gradient sum of those rows, in
// batch order, so that no two workers write one row and sums do not depend on the pool size.
torch::Tensor LightGCN::direct_backward(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  drop_factors();
  const int64_t nu = n_users(), n = nu + n_items(), d = user_embedding_.size(1);
  for (auto* buf : {&ego_, &layer_, &next_, &mean_, &grad_mean_})
    buf->resize(static_cast<size_t>(n * d));
  const torch::Tensor users_table = user_embedding_.detach().contiguous();
  const torch::Tensor items_table = item_embedding_.detach().contiguous();
  if (!user_grad_.defined() || !user_grad_.sizes().equals(users_table.sizes()) ||
      !item_grad_.sizes().equals(items_table.sizes())) {
    user_grad_ = torch::empty_like(users_table);
    item_grad_ = torch::empty_like(items_table);
  }
  const torch::Tensor users = batch.users.contiguous(), pos = batch.items.contiguous(),
                      neg = batch.neg_items.contiguous();
  const int64_t b = users.size(0);
  row_dx_.resize(static_cast<size_t>(b));
  row_terms_.resize(static_cast<size_t>(4 * b));

  LightGCNStep s{};
  s.adj = &adjacency_.matrix();
  s.adj_t = &adjacency_.transposed();
  s.n_users = nu;
  s.d = d;
  s.n_layers = n_layers_;
  s.divisor = static_cast<float>(n_layers_ + 1);
  s.ego_users = users_table.data_ptr<float>();
  s.ego_items = items_table.data_ptr<float>();
  s.users = users.data_ptr<int64_t>();
  s.pos = pos.data_ptr<int64_t>();
  s.neg = neg.data_ptr<int64_t>();
  s.b = b;
  s.ego = ego_.data();
  s.mean = mean_.data();
  s.g = grad_mean_.data();
  s.layer[0] = layer_.data();
  s.layer[1] = next_.data();
  s.row_dx = row_dx_.data();
  s.row_terms = row_terms_.data();
  s.grad_users = user_grad_.data_ptr<float>();
  s.grad_items = item_grad_.data_ptr<float>();
  s.squared = require_pow_;
  s.reg_scale = reg_weight_ / static_cast<double>(b);

  ThreadPool& pool = ThreadPool::instance();
  const int threads = pool.threads();
  const std::vector<int64_t> rows = layers::balanced_rows(*s.adj, threads);
  const std::vector<int64_t> rows_t = layers::balanced_rows(*s.adj_t, threads);
  pool.run_phases(static_cast<int>(2 * n_layers_ + 3), [&](int w, int phase) {
    const auto at = static_cast<size_t>(w);
    const int64_t first = rows[at], last = rows[at + 1];
    if (phase == 0)
      lightgcn_copy_ego(s, first, last);
    else if (phase <= n_layers_)
      lightgcn_forward_layer(s, phase - 1, first, last);
    else if (phase == n_layers_ + 1)
      lightgcn_bpr_rows(s, b * w / threads, b * (w + 1) / threads);
    else if (phase == n_layers_ + 2)
      lightgcn_scatter_bpr(s, first, last);
    else
      lightgcn_backward_layer(s, phase - n_layers_ - 3, rows_t[at], rows_t[at + 1]);
  });

  double bpr = 0.0, squares[3];
  for (int64_t k = 0; k < b; ++k) bpr += row_terms_[static_cast<size_t>(4 * k)];
  lightgcn_squares(s, squares);
  user_embedding_.mutable_grad() = user_grad_;
  item_embedding_.mutable_grad() = item_grad_;
  return torch::tensor(static_cast<float>(bpr / static_cast<double>(b) +
                                          lightgcn_norms(s, squares, nullptr) * s.reg_scale));
}

RECBOLE_REGISTER_MODEL(LightGCN) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"LightGCN",
       "general",
       InputType::kPairwise,
       "Light graph convolution: embeddings averaged over propagation layers",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        Key("n_layers", KeyType::kInt).min(1).help("Propagation layers over the user-item graph"),
        keys::reg_weight().decl("Weight of the layer-0 embedding norm")},
       [](const ModelContext& ctx) { return std::make_shared<LightGCN>(ctx); }});
}

}  // namespace recbole::models

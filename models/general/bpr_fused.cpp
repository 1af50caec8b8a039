#include "models/general/bpr_fused.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include <torch/torch.h>

#include "kernels/row_adam.h"
#include "kernels/simd.h"
#include "recbole/config/config.h"
#include "recbole/config/learners.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/huge_pages.h"
#include "recbole/utils/text.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {

bool fused_bpr_applicable(const config::Config& config, const BPR& model,
                          const DeviceManager& device, int world_size) {
  return fast_paths_enabled() && config.get_bool("fast_bpr") &&
         model.user_embedding().size(1) <= FusedBprTrainer::kMaxDim && !device.is_cuda() &&
         FusedBprTrainer::update_for(config.get_string("learner")).has_value() &&
         config.is_null("clip_grad_norm") && world_size == 1 && !config.get_bool("enable_amp");
}

std::optional<FusedBprTrainer::Update> FusedBprTrainer::update_for(const std::string& learner) {
  const std::optional<config::Learner> l = config::parse_learner(to_lower(learner));
  if (!l) return std::nullopt;
  switch (*l) {
    case config::Learner::kAdam:
      return Update::kDenseAdam;
    case config::Learner::kSparseAdam:
      return Update::kLazyAdam;
    case config::Learner::kSgd:
      return Update::kSgd;
    case config::Learner::kAdamW:
    case config::Learner::kAdagrad:
    case config::Learner::kRmsprop:
      break;
  }
  return std::nullopt;
}

namespace {

constexpr int64_t kSampleChunk = data::TrainBatcher::kNegChunk;  // samples per task of job A
constexpr int64_t kMaxDim = FusedBprTrainer::kMaxDim;

// Row width: Dim is std::integral_constant<int64_t, 64> for the default embedding_size (loops
// of a known trip count: fully unrolled, no remainder, no runtime alias checks) or int64_t.
using Dim64 = std::integral_constant<int64_t, 64>;

// ⟨u, w⟩ with 16 independent partial sums (one AVX-512 register), so the products vectorise.
template <typename Dim>
RECBOLE_INLINE float dot(const float* __restrict u, const float* __restrict w, Dim dim) {
  const int64_t d = dim;
  float part[16] = {};
  int64_t k = 0;
  for (; k + 16 <= d; k += 16)
    for (int j = 0; j < 16; ++j) part[j] += u[k + j] * w[k + j];
  // Pairwise: four vector halvings instead of a chain of 16 dependent scalar additions.
  for (int half = 8; half > 0; half /= 2)
    for (int j = 0; j < half; ++j) part[j] += part[j + half];
  float x = part[0];
  for (; k < d; ++k) x += u[k] * w[k];
  return x;
}

// Prefetches every cache line of a row (a hardware prefetcher fetches at most the adjacent
// line, and at 100M interactions each row of a big table is a cold miss).
template <typename Dim>
RECBOLE_INLINE void prefetch_row(const float* row, Dim dim, bool write = false) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; k += 16) {
    if (write)
      __builtin_prefetch(row + k, 1);
    else
      __builtin_prefetch(row + k);
  }
}

// e^x and ln(y) (y > 0, normal) for the loss loop: branch-free, so the loop over a chunk
// vectorises (glibc's expf/logf are scalar calls without -ffast-math); relative error ≤ 3e-7
// (measured against double precision over the ranges the loss uses), i.e. about 2 ulp.
RECBOLE_INLINE float exp_approx(float x) {  // x in [-87, 88]: the caller clamps
  // n = round(x · log2 e) by the 2^23 trick: adding 2^23 + 127 rounds to an integer and leaves
  // n + 127 (in [1, 254] after the clamp) in the low mantissa bits. No floor and no float → int
  // conversion, which GCC does not vectorise while FP traps are honoured.
  constexpr float kShift = 8388608.f + 127.f;
  const float shifted = x * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // x − n·ln 2
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits & 0xff) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

RECBOLE_INLINE float log_approx(float y) {
  int32_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  int32_t e = ((bits >> 23) & 0xff) - 127;
  const int32_t mantissa_bits = (bits & 0x7fffff) | 0x3f800000;
  float m;  // y = m · 2^e, m in [1, 2), then folded into [√½, √2)
  std::memcpy(&m, &mantissa_bits, sizeof m);
  const bool big = m > 1.41421356f;
  const float half = m * 0.5f;  // computed unconditionally: a select, not a branch
  m = big ? half : m;
  e += big ? 1 : 0;
  const float t = (m - 1.f) / (m + 1.f), t2 = t * t;  // ln m = 2 atanh t
  float p = 1.f / 9;
  p = p * t2 + 1.f / 7;
  p = p * t2 + 1.f / 5;
  p = p * t2 + 1.f / 3;
  p = p * t2 + 1.f;
  return 2.f * t * p + static_cast<float>(e) * 0.693147180559945309f;
}

template <bool kStash, typename Dim>
RECBOLE_INLINE double score_chunk_impl(const float* U, const float* I, const int64_t* users,
                                       const int64_t* pos, const int64_t* neg, int64_t lo,
                                       int64_t hi, Dim d, float inv_b, float* dx, float* user_stash,
                                       float* diff_stash) {
  // Two passes: the dot products over the gathered rows, then the loss and its derivative over
  // the chunk as one vectorisable loop.
  constexpr int64_t kAhead = 8;
  float x[kSampleChunk], loss[kSampleChunk];
  const int64_t n = hi - lo;
  const int64_t dd = d;
  for (int64_t r = lo; r < hi; ++r) {
    if (r + kAhead < hi) {
      prefetch_row(U + users[r + kAhead] * dd, d);
      prefetch_row(I + pos[r + kAhead] * dd, d);
      prefetch_row(I + neg[r + kAhead] * dd, d);
    }
    const float* __restrict u = U + users[r] * dd;
    const float* __restrict a = I + pos[r] * dd;
    const float* __restrict b = I + neg[r] * dd;
    if constexpr (kStash) {  // written straight to the stashes, and the dot read back there
      float* __restrict us = user_stash + r * dd;
      float* __restrict ds = diff_stash + r * dd;
      for (int64_t k = 0; k < dd; ++k) {
        us[k] = u[k];
        ds[k] = a[k] - b[k];
      }
      x[r - lo] = dot(us, ds, d);
    } else {
      alignas(64) float diff[kMaxDim];
      for (int64_t k = 0; k < dd; ++k) diff[k] = a[k] - b[k];
      x[r - lo] = dot(u, diff, d);
    }
  }
  float* out = dx + lo;
  // A score that is not finite (a diverging run: parameters at inf or NaN) must not vanish in
  // the clamp, whose min/max map NaN to a bound: the chunk's loss is NaN then, and the trainer
  // stops with its "loss is nan" error as the generic path does. x − x is 0 only when finite.
  int not_finite = 0;
  for (int64_t i = 0; i < n; ++i) not_finite |= (x[i] - x[i] == 0.f) ? 0 : 1;
  // The clamp for e^−x in a loop of its own: inside the loss loop GCC specialises the clamped
  // cases into branches, and the loop no longer vectorises.
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(-x[i], -87.f), 88.f);
  for (int64_t i = 0; i < n; ++i) {
    const float s = 1.f / (1.f + exp_approx(x[i]));  // σ(x)
    loss[i] = -log_approx(1e-10f + s);
    out[i] = -(s * (1.f - s)) / (1e-10f + s) * inv_b;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += loss[i];
  return not_finite ? std::nan("") : sum;
}

// Job A for samples [lo, hi): dx[r] = d loss / d (pos − neg score), the chunk's loss sum, and
// with stashes (not null) each sample's u and i⁺ − i⁻.
RECBOLE_MULTIVERSION
double score_chunk(const float* U, const float* I, const int64_t* users, const int64_t* pos,
                   const int64_t* neg, int64_t lo, int64_t hi, int64_t d, float inv_b, float* dx,
                   float* user_stash, float* diff_stash) {
  // Plain branches, not a generic lambda: a lambda's body would not be compiled into each
  // target clone of this function.
  if (user_stash != nullptr) {
    if (d == 64)
      return score_chunk_impl<true>(U, I, users, pos, neg, lo, hi, Dim64{}, inv_b, dx, user_stash,
                                    diff_stash);
    return score_chunk_impl<true>(U, I, users, pos, neg, lo, hi, d, inv_b, dx, user_stash,
                                  diff_stash);
  }
  if (d == 64)
    return score_chunk_impl<false>(U, I, users, pos, neg, lo, hi, Dim64{}, inv_b, dx, nullptr,
                                   nullptr);
  return score_chunk_impl<false>(U, I, users, pos, neg, lo, hi, d, inv_b, dx, nullptr, nullptr);
}

// torch.optim.SparseAdam on one row with a gradient.
template <typename Dim>
RECBOLE_INLINE void sparse_adam_row(float* __restrict p, const float* __restrict g,
                                    float* __restrict m, float* __restrict v, Dim dim,
                                    const AdamConsts& c) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) {
    const float mk = m[k] + (g[k] - m[k]) * (1.f - c.b1);
    const float vk = v[k] + (g[k] * g[k] - v[k]) * (1.f - c.b2);
    m[k] = mk;
    v[k] = vk;
    p[k] -= c.step_size * (mk / (std::sqrt(vk) + c.eps));
  }
}

// torch.optim.SGD (no momentum) on one row with weight decay: p −= lr · (g + wd · p); g may be
// null (no gradient this step).
template <typename Dim>
RECBOLE_INLINE void sgd_decay_row(float* __restrict p, const float* __restrict g, Dim dim, float lr,
                                  float wd) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) p[k] -= lr * ((g ? g[k] : 0.f) + wd * p[k]);
}

// torch.optim.SGD without momentum and weight decay on one row with a gradient: p −= lr · g.
template <typename Dim>
RECBOLE_INLINE void sgd_row(float* __restrict p, const float* __restrict g, Dim dim, float lr) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) p[k] -= lr * g[k];
}

// Worker `worker` of `workers` owns the rows in the 64-row blocks b with b % workers == worker:
// whole cache lines of the slot array belong to one worker. A mask when the worker count is a
// power of two: an integer division per row would cost as much as the row's arithmetic.
struct OwnedRows {
  int worker, workers;
  bool operator()(int64_t row) const {
    const int64_t block = row >> 6;
    const bool pow2 = (workers & (workers - 1)) == 0;
    return (pow2 ? (block & (workers - 1)) : (block % workers)) == worker;
  }
};

// A table's side of job B for one worker: the slot of every row (-1: untouched), the rows
// touched this step (in slot order), and the slots' gradients [slots, dim].
struct TableGradients {
  int32_t* slot;
  std::vector<int32_t>* touched;
  float* grads;
};

// Job B, first part, for one worker: the gradients of the rows it owns, each summed in sample
// order into a compact per-worker buffer (slot k of the k-th row touched this step), from the
// parameter rows or, for big tables, the stashes. Row r's slot is slot[r], -1 before its first
// touch.
//
// Branch-free where the branches would be coin flips: which worker owns a row (half the rows
// each with two workers) and whether a row is touched for the first time. A first pass
// compacts the worker's contributions with an unconditional store and a conditional count; the
// second adds each to its slot, a new slot starting from 0 · old + s·x = s·x.
using Contribution = FusedContribution;

// Where a contribution's row comes from: a user row's gradient is s · (i⁺ − i⁻) of its sample,
// an item row's is ±s · u. Read from the parameters, which no worker writes during the gather
// phase.
struct UserGradSource {
  const float* I;
  const int64_t *pos, *neg;
  template <typename Dim>
  RECBOLE_INLINE void prefetch(int64_t r, Dim d) const {
    prefetch_row(I + pos[r] * int64_t{d}, d);
    prefetch_row(I + neg[r] * int64_t{d}, d);
  }
  template <typename Dim>
  RECBOLE_INLINE void add(float* __restrict g, int64_t r, float s, float keep, Dim d) const {
    const int64_t dd = d;
    const float* __restrict a = I + pos[r] * dd;
    const float* __restrict b = I + neg[r] * dd;
    for (int64_t k = 0; k < dd; ++k) g[k] = g[k] * keep + s * (a[k] - b[k]);
  }
};

struct ItemGradSource {
  const float* U;
  const int64_t* users;
  template <typename Dim>
  RECBOLE_INLINE void prefetch(int64_t r, Dim d) const {
    prefetch_row(U + users[r] * int64_t{d}, d);
  }
  template <typename Dim>
  RECBOLE_INLINE void add(float* __restrict g, int64_t r, float s, float keep, Dim d) const {
    const int64_t dd = d;
    const float* __restrict u = U + users[r] * dd;
    for (int64_t k = 0; k < dd; ++k) g[k] = g[k] * keep + s * u[k];
  }
};

// The same contributions from the stashes job A wrote (big tables: see FusedBprTrainer).
struct StashSource {
  const float* stash;  // [B, dim]: i⁺ − i⁻ for user rows, u for item rows
  template <typename Dim>
  RECBOLE_INLINE void prefetch(int64_t, Dim) const {}  // read in sample order: the hardware's
  template <typename Dim>
  RECBOLE_INLINE void add(float* __restrict g, int64_t r, float s, float keep, Dim d) const {
    const int64_t dd = d;
    const float* __restrict x = stash + r * dd;
    for (int64_t k = 0; k < dd; ++k) g[k] = g[k] * keep + s * x[k];
  }
};

template <typename Source, typename Dim>
RECBOLE_INLINE void add_contributions(const Contribution* list, int64_t n, const float* dx,
                                      const Source& source, Dim d, TableGradients& t) {
  const int64_t dd = d;
  int32_t* touched = t.touched->data();
  int32_t used = 0;
  constexpr int64_t kAhead = 16;     // prefetch distance of the slot entries
  constexpr int64_t kRowAhead = 12;  // and of the rows read
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(t.slot + list[i + kAhead].row, 1);
    if (i + kRowAhead < n) {
      const int32_t ahead = list[i + kRowAhead].code;
      source.prefetch(ahead >= 0 ? ahead : ~ahead, d);
    }
    const int32_t row = list[i].row, code = list[i].code;
    const int64_t r = code >= 0 ? code : ~code;
    const float s = code >= 0 ? dx[r] : -dx[r];
    const int32_t old = t.slot[row];
    const bool first = old < 0;
    const int32_t slot = first ? used : old;
    t.slot[row] = slot;
    touched[used] = row;
    used += first ? 1 : 0;
    const float keep = first ? 0.f : 1.f;  // the slot holds a finite earlier gradient or 0
    source.add(t.grads + static_cast<int64_t>(slot) * dd, r, s, keep, d);
  }
  t.touched->resize(static_cast<size_t>(used));
}

template <typename Dim>
RECBOLE_INLINE void gather_gradients_impl(const OwnedRows& own, const float* U, const float* I,
                                          const int64_t* users, const int64_t* pos,
                                          const int64_t* neg, int64_t b, const float* dx,
                                          const float* user_stash, const float* diff_stash, Dim d,
                                          TableGradients& ug, TableGradients& ig,
                                          Contribution* user_list, Contribution* item_list) {
  int64_t nu = 0, ni = 0;
  for (int64_t r = 0; r < b; ++r) {
    const int32_t code = static_cast<int32_t>(r);
    user_list[nu] = {static_cast<int32_t>(users[r]), code};
    nu += own(users[r]) ? 1 : 0;
    item_list[ni] = {static_cast<int32_t>(pos[r]), code};
    ni += own(pos[r]) ? 1 : 0;
    item_list[ni] = {static_cast<int32_t>(neg[r]), ~code};
    ni += own(neg[r]) ? 1 : 0;
  }
  ug.touched->resize(static_cast<size_t>(nu));
  ig.touched->resize(static_cast<size_t>(ni));
  if (user_stash != nullptr) {
    add_contributions(user_list, nu, dx, StashSource{diff_stash}, d, ug);
    add_contributions(item_list, ni, dx, StashSource{user_stash}, d, ig);
  } else {
    add_contributions(user_list, nu, dx, UserGradSource{I, pos, neg}, d, ug);
    add_contributions(item_list, ni, dx, ItemGradSource{U, users}, d, ig);
  }
}

RECBOLE_MULTIVERSION
void gather_gradients(const OwnedRows& own, const float* U, const float* I, const int64_t* users,
                      const int64_t* pos, const int64_t* neg, int64_t b, const float* dx,
                      const float* user_stash, const float* diff_stash, int64_t d,
                      TableGradients& ug, TableGradients& ig, Contribution* user_list,
                      Contribution* item_list) {
  if (d == 64)
    return gather_gradients_impl(own, U, I, users, pos, neg, b, dx, user_stash, diff_stash, Dim64{},
                                 ug, ig, user_list, item_list);
  gather_gradients_impl(own, U, I, users, pos, neg, b, dx, user_stash, diff_stash, d, ug, ig,
                        user_list, item_list);
}

template <typename Dim>
RECBOLE_INLINE void lazy_update_impl(float* P, float* M, float* V, const int32_t* rows, int64_t n,
                                     const float* grads, Dim d, const AdamConsts& c) {
  // The rows are scattered over tables larger than the cache at scale: prefetch every line of
  // the three rows a few rows ahead, so that their misses overlap.
  constexpr int64_t kAhead = 6;
  const int64_t dd = d;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      const int64_t ahead = rows[i + kAhead] * dd;
      prefetch_row(P + ahead, d, true);
      prefetch_row(M + ahead, d, true);
      prefetch_row(V + ahead, d, true);
    }
    const int64_t off = rows[i] * dd;
    sparse_adam_row(P + off, grads + i * dd, M + off, V + off, d, c);
  }
}

template <typename Dim>
RECBOLE_INLINE void sgd_sparse_update_impl(float* P, const int32_t* rows, int64_t n,
                                           const float* grads, Dim d, float lr) {
  constexpr int64_t kAhead = 6;
  const int64_t dd = d;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n) prefetch_row(P + rows[i + kAhead] * dd, d, true);
    sgd_row(P + rows[i] * dd, grads + i * dd, d, lr);
  }
}

// Job B, SGD without weight decay: only the rows touched at this step move (an untouched row's
// gradient is 0); row rows[k]'s gradient in slot k.
RECBOLE_MULTIVERSION
void sgd_sparse_update(float* P, const int32_t* rows, int64_t n, const float* grads, int64_t d,
                       float lr) {
  if (d == 64) return sgd_sparse_update_impl(P, rows, n, grads, Dim64{}, lr);
  sgd_sparse_update_impl(P, rows, n, grads, d, lr);
}

template <typename Dim>
RECBOLE_INLINE void sgd_dense_update_impl(float* P, const int32_t* slot, int64_t lo, int64_t hi,
                                          const float* grads, Dim d, float lr, float wd) {
  const int64_t dd = d;
  for (int64_t row = lo; row < hi; ++row) {
    const float* g = slot[row] >= 0 ? grads + slot[row] * dd : nullptr;
    sgd_decay_row(P + row * dd, g, d, lr, wd);
  }
}

// Job B, SGD with weight decay: every row of [lo, hi) decays, as torch's SGD does with the
// embedding's dense gradient.
RECBOLE_MULTIVERSION
void sgd_dense_update(float* P, const int32_t* slot, int64_t lo, int64_t hi, const float* grads,
                      int64_t d, float lr, float wd) {
  if (d == 64) return sgd_dense_update_impl(P, slot, lo, hi, grads, Dim64{}, lr, wd);
  sgd_dense_update_impl(P, slot, lo, hi, grads, d, lr, wd);
}

// Job B, lazy: SparseAdam on the rows touched at this step; row rows[k]'s gradient in slot k.
RECBOLE_MULTIVERSION
void lazy_update(float* P, float* M, float* V, const int32_t* rows, int64_t n, const float* grads,
                 int64_t d, AdamConsts c) {
  if (d == 64) return lazy_update_impl(P, M, V, rows, n, grads, Dim64{}, c);
  lazy_update_impl(P, M, V, rows, n, grads, d, c);
}

template <typename Dim>
RECBOLE_INLINE void dense_update_impl(float* P, float* M, float* V, const int32_t* slot, int64_t lo,
                                      int64_t hi, const float* grads, Dim d, const AdamConsts& c) {
  const int64_t dd = d;
  for (int64_t row = lo; row < hi; ++row) {
    const float* g = slot[row] >= 0 ? grads + slot[row] * dd : nullptr;
    adam_row(P + row * dd, g, M + row * dd, V + row * dd, d, c);
  }
}

// Job B, dense: Adam on rows [lo, hi); rows without a slot have no gradient at this step.
RECBOLE_MULTIVERSION
void dense_update(float* P, float* M, float* V, const int32_t* slot, int64_t lo, int64_t hi,
                  const float* grads, int64_t d, AdamConsts c) {
  if (d == 64) return dense_update_impl(P, M, V, slot, lo, hi, grads, Dim64{}, c);
  dense_update_impl(P, M, V, slot, lo, hi, grads, d, c);
}

}  // namespace

FusedBprTrainer::FusedBprTrainer(BPR& model, Update update, double learning_rate,
                                 double weight_decay, double stash_above_bytes)
    : model_(model), update_(update), lr_(learning_rate), wd_(weight_decay) {
  dim_ = model.user_embedding().size(1);
  auto init = [&](Table& t, const torch::Tensor& param) {
    t.param = param.data_ptr<float>();
    t.rows = param.size(0);
    const size_t n = static_cast<size_t>(param.numel());
    collapse_to_huge_pages(t.param, n * sizeof(float));
    if (update_ != Update::kSgd) {  // SGD keeps no moments
      resize_on_huge_pages(t.m, n);
      resize_on_huge_pages(t.v, n);
    }
    resize_on_huge_pages(t.slot, static_cast<size_t>(t.rows));
    std::fill(t.slot.begin(), t.slot.end(), -1);
  };
  init(users_, model.user_embedding());
  init(items_, model.item_embedding());
  const double table_bytes =
      static_cast<double>(users_.rows + items_.rows) * static_cast<double>(dim_) * sizeof(float);
  stash_ = table_bytes > stash_above_bytes;
}

void FusedBprTrainer::train_epoch(data::TrainBatcher& batcher, double& loss_sum,
                                  const std::function<bool()>& after_batch) {
  torch::NoGradGuard no_grad;
  // The model's tensors may have been replaced (a checkpoint load): take the pointers now.
  users_.param = model_.user_embedding().data_ptr<float>();
  items_.param = model_.item_embedding().data_ptr<float>();
  const float* U = users_.param;
  const float* I = items_.param;
  const int64_t d = dim_;
  const int workers = ThreadPool::instance().threads();
  scratch_.resize(static_cast<size_t>(workers));
  data::PairBatch pb;
  std::vector<double> chunk_loss;
  while (batcher.next_positives(pb)) {
    const int64_t b = pb.size();
    ++step_;
    // A: negatives, score differences, loss (and the stashes, for big tables).
    dx_.resize(static_cast<size_t>(b));
    if (stash_) {
      user_stash_.resize(static_cast<size_t>(b * d));
      diff_stash_.resize(static_cast<size_t>(b * d));
    }
    float* user_stash = stash_ ? user_stash_.data() : nullptr;
    float* diff_stash = stash_ ? diff_stash_.data() : nullptr;
    const int64_t chunks = (b + kSampleChunk - 1) / kSampleChunk;
    chunk_loss.assign(static_cast<size_t>(chunks), 0.0);
    const float inv_b = 1.f / static_cast<float>(b);
    parallel_for_blocks(b, kSampleChunk, [&](int64_t c, int64_t first, int64_t last) {
      batcher.sample_negatives(pb, c);
      chunk_loss[c] = score_chunk(U, I, pb.users.data(), pb.pos_items.data(), pb.neg_items.data(),
                                  first, last, d, inv_b, dx_.data(), user_stash, diff_stash);
    });
    double batch_loss = 0;
    for (double l : chunk_loss) batch_loss += l;  // in chunk order: thread-count independent
    loss_sum += batch_loss / static_cast<double>(b);

    // B: each worker's rows: gradients, then the optimizer step. The same rows on the same
    // core every batch, so their moments stay in its cache where they fit. Gathering from the
    // parameters, no worker may move a row before all have gathered: a barrier between.
    if (stash_) {
      ThreadPool::instance().run_per_worker([&](int w) {
        gather_owned_rows(w, workers, b, pb);
        update_owned_rows(w, workers);
      });
    } else {
      ThreadPool::instance().run_phases(2, [&](int w, int phase) {
        if (phase == 0)
          gather_owned_rows(w, workers, b, pb);
        else
          update_owned_rows(w, workers);
      });
    }
    if (after_batch()) return;
  }
}

namespace {

torch::Tensor vector_tensor(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kFloat32)
      .clone();
}

void read_vector(torch::serialize::InputArchive& archive, const std::string& key,
                 std::vector<float>& v) {
  torch::Tensor t;
  archive.read(key, t);
  if (t.numel() != static_cast<int64_t>(v.size()))
    throw Error("resume checkpoint: fused BPR state \"" + key + "\" holds " +
                std::to_string(t.numel()) + " values, expected " + std::to_string(v.size()));
  std::copy_n(t.contiguous().data_ptr<float>(), v.size(), v.data());
}

}  // namespace

void FusedBprTrainer::save(torch::serialize::OutputArchive& archive) const {
  archive.write("step", torch::tensor({step_}, torch::kInt64));
  if (update_ == Update::kSgd) return;
  archive.write("user_m", vector_tensor(users_.m));
  archive.write("user_v", vector_tensor(users_.v));
  archive.write("item_m", vector_tensor(items_.m));
  archive.write("item_v", vector_tensor(items_.v));
}

void FusedBprTrainer::load(torch::serialize::InputArchive& archive) {
  torch::Tensor step;
  archive.read("step", step);
  step_ = step.item<int64_t>();
  if (update_ == Update::kSgd) return;
  read_vector(archive, "user_m", users_.m);
  read_vector(archive, "user_v", users_.v);
  read_vector(archive, "item_m", items_.m);
  read_vector(archive, "item_v", items_.v);
}

void FusedBprTrainer::gather_owned_rows(int worker, int workers, int64_t b,
                                        const data::PairBatch& pb) {
  WorkerScratch& ws = scratch_[static_cast<size_t>(worker)];
  // At most one slot per contribution: b user rows and 2b item rows.
  ws.user_grads.resize(static_cast<size_t>(b * dim_));
  ws.item_grads.resize(static_cast<size_t>(2 * b * dim_));
  TableGradients ug{users_.slot.data(), &ws.touched_users, ws.user_grads.data()};
  TableGradients ig{items_.slot.data(), &ws.touched_items, ws.item_grads.data()};
  // Room for one unconditional store past the last owned entry.
  ws.user_list.resize(static_cast<size_t>(b + 1));
  ws.item_list.resize(static_cast<size_t>(2 * b + 1));
  gather_gradients(OwnedRows{worker, workers}, users_.param, items_.param, pb.users.data(),
                   pb.pos_items.data(), pb.neg_items.data(), b, dx_.data(),
                   stash_ ? user_stash_.data() : nullptr, stash_ ? diff_stash_.data() : nullptr,
                   dim_, ug, ig, ws.user_list.data(), ws.item_list.data());
}

void FusedBprTrainer::update_owned_rows(int worker, int workers) {
  WorkerScratch& ws = scratch_[static_cast<size_t>(worker)];
  const float* user_grads = ws.user_grads.data();
  const float* item_grads = ws.item_grads.data();
  const double bc1 = 1.0 - std::pow(beta1_, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(beta2_, static_cast<double>(step_));
  AdamConsts c;
  c.b1 = static_cast<float>(beta1_);
  c.b2 = static_cast<float>(beta2_);
  c.eps = static_cast<float>(eps_);
  if (update_ == Update::kSgd) {
    const float lr = static_cast<float>(lr_), wd = static_cast<float>(wd_);
    for (auto [tab, grads, touched] : {std::tuple{&users_, user_grads, &ws.touched_users},
                                       std::tuple{&items_, item_grads, &ws.touched_items}}) {
      if (wd == 0.f) {
        sgd_sparse_update(tab->param, touched->data(), static_cast<int64_t>(touched->size()), grads,
                          dim_, lr);
        continue;
      }
      for (int64_t lo = 64 * static_cast<int64_t>(worker); lo < tab->rows; lo += 64 * workers)
        sgd_dense_update(tab->param, tab->slot.data(), lo, std::min(tab->rows, lo + 64), grads,
                         dim_, lr, wd);
    }
  } else if (update_ == Update::kDenseAdam) {
    c.wd = static_cast<float>(wd_);
    c.step_size = static_cast<float>(lr_ / bc1);
    c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    for (auto [tab, grads] : {std::pair{&users_, user_grads}, std::pair{&items_, item_grads}}) {
      for (int64_t lo = 64 * static_cast<int64_t>(worker); lo < tab->rows; lo += 64 * workers)
        dense_update(tab->param, tab->m.data(), tab->v.data(), tab->slot.data(), lo,
                     std::min(tab->rows, lo + 64), grads, dim_, c);
    }
  } else {
    c.wd = 0.f;  // SparseAdam has no weight decay (RecBole ignores it for sparse_adam too)
    c.step_size = static_cast<float>(lr_ * std::sqrt(bc2) / bc1);
    c.inv_sqrt_bc2 = 1.f;
    lazy_update(users_.param, users_.m.data(), users_.v.data(), ws.touched_users.data(),
                static_cast<int64_t>(ws.touched_users.size()), user_grads, dim_, c);
    lazy_update(items_.param, items_.m.data(), items_.v.data(), ws.touched_items.data(),
                static_cast<int64_t>(ws.touched_items.size()), item_grads, dim_, c);
  }
  for (int32_t row : ws.touched_users) users_.slot[static_cast<size_t>(row)] = -1;
  for (int32_t row : ws.touched_items) items_.slot[static_cast<size_t>(row)] = -1;
}

}  // namespace recbole::models

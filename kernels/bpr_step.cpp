#include "kernels/bpr_step.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/fast_math.h"

namespace recbole::kernels::bpr {
namespace {

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

template <bool kStash, typename Dim>
RECBOLE_INLINE double score_chunk_impl(const float* U, const float* I, const int64_t* users,
                                       const int64_t* pos, const int64_t* neg, int64_t lo,
                                       int64_t hi, Dim d, float inv_b, float* dx, float* user_stash,
                                       float* diff_stash) {
  // Two passes: the dot products over the gathered rows, then the loss and its derivative over
  // the chunk as one vectorisable loop.
  constexpr int64_t kAhead = 8;
  float x[kMaxChunk], loss[kMaxChunk];
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

// The worker's side of the row partition (owns_row), as a predicate.
struct OwnedRows {
  int worker, workers;
  bool operator()(int64_t row) const { return owns_row(row, worker, workers); }
};

// gather_gradients: each owned row's gradient summed in sample order into a compact per-worker
// buffer (slot k of the k-th row touched this step), from the parameter rows or the stashes.
// No gradient table of the embedding's size: at scale its random writes and reads cost as much
// memory traffic as the moments.
//
// Branch-free where the branches would be coin flips: which worker owns a row (half the rows
// each with two workers) and whether a row is touched for the first time. A first pass
// compacts the worker's contributions with an unconditional store and a conditional count; the
// second adds each to its slot, a new slot starting from 0 · old + s·x = s·x.

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

// The same contributions from the stashes score_chunk wrote.
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
                                      const Source& source, Dim d, RowGradients& t) {
  const int64_t dd = d;
  int32_t* touched = t.touched;
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
  t.n_touched = used;
}

template <typename Dim>
RECBOLE_INLINE void gather_gradients_impl(const OwnedRows& own, const float* U, const float* I,
                                          const int64_t* users, const int64_t* pos,
                                          const int64_t* neg, int64_t b, const float* dx,
                                          const float* user_stash, const float* diff_stash, Dim d,
                                          RowGradients& ug, RowGradients& ig,
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
  if (user_stash != nullptr) {
    add_contributions(user_list, nu, dx, StashSource{diff_stash}, d, ug);
    add_contributions(item_list, ni, dx, StashSource{user_stash}, d, ig);
  } else {
    add_contributions(user_list, nu, dx, UserGradSource{I, pos, neg}, d, ug);
    add_contributions(item_list, ni, dx, ItemGradSource{U, users}, d, ig);
  }
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

template <typename Dim>
RECBOLE_INLINE void sgd_dense_update_impl(float* P, const int32_t* slot, int64_t lo, int64_t hi,
                                          const float* grads, Dim d, float lr, float wd) {
  const int64_t dd = d;
  for (int64_t row = lo; row < hi; ++row) {
    const float* g = slot[row] >= 0 ? grads + slot[row] * dd : nullptr;
    sgd_decay_row(P + row * dd, g, d, lr, wd);
  }
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

}  // namespace

// The entry points dispatch on the row width with plain branches, not a generic lambda: a
// lambda's body would not be compiled into each target clone of the function.

RECBOLE_MULTIVERSION
double score_chunk(const float* U, const float* I, const int64_t* users, const int64_t* pos,
                   const int64_t* neg, int64_t lo, int64_t hi, int64_t d, float inv_b, float* dx,
                   float* user_stash, float* diff_stash) {
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

RECBOLE_MULTIVERSION
void gather_gradients(int worker, int workers, const float* U, const float* I, const int64_t* users,
                      const int64_t* pos, const int64_t* neg, int64_t b, const float* dx,
                      const float* user_stash, const float* diff_stash, int64_t d, RowGradients& ug,
                      RowGradients& ig, Contribution* user_list, Contribution* item_list) {
  const OwnedRows own{worker, workers};
  if (d == 64)
    return gather_gradients_impl(own, U, I, users, pos, neg, b, dx, user_stash, diff_stash, Dim64{},
                                 ug, ig, user_list, item_list);
  gather_gradients_impl(own, U, I, users, pos, neg, b, dx, user_stash, diff_stash, d, ug, ig,
                        user_list, item_list);
}

RECBOLE_MULTIVERSION
void sgd_sparse_update(float* P, const int32_t* rows, int64_t n, const float* grads, int64_t d,
                       float lr) {
  if (d == 64) return sgd_sparse_update_impl(P, rows, n, grads, Dim64{}, lr);
  sgd_sparse_update_impl(P, rows, n, grads, d, lr);
}

RECBOLE_MULTIVERSION
void sgd_dense_update(float* P, const int32_t* slot, int64_t lo, int64_t hi, const float* grads,
                      int64_t d, float lr, float wd) {
  if (d == 64) return sgd_dense_update_impl(P, slot, lo, hi, grads, Dim64{}, lr, wd);
  sgd_dense_update_impl(P, slot, lo, hi, grads, d, lr, wd);
}

RECBOLE_MULTIVERSION
void lazy_adam_update(float* P, float* M, float* V, const int32_t* rows, int64_t n,
                      const float* grads, int64_t d, AdamConsts c) {
  if (d == 64) return lazy_update_impl(P, M, V, rows, n, grads, Dim64{}, c);
  lazy_update_impl(P, M, V, rows, n, grads, d, c);
}

RECBOLE_MULTIVERSION
void dense_adam_update(float* P, float* M, float* V, const int32_t* slot, int64_t lo, int64_t hi,
                       const float* grads, int64_t d, AdamConsts c) {
  if (d == 64) return dense_update_impl(P, M, V, slot, lo, hi, grads, Dim64{}, c);
  dense_update_impl(P, M, V, slot, lo, hi, grads, d, c);
}

}  // namespace recbole::kernels::bpr

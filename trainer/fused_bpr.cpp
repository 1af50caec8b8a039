#include "trainer/fused_bpr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <torch/torch.h>

#include "recbole/config/config.h"
#include "recbole/utils/simd.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::trainer {

bool fused_bpr_applicable(const config::Config& config, const models::Model& model,
                          const DeviceManager& device, int world_size) {
  std::string learner = config.get_string("learner");
  for (auto& c : learner) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return config.get_bool("fast_bpr") && dynamic_cast<const models::BPR*>(&model) != nullptr &&
         !device.is_cuda() && (learner == "adam" || learner == "sparse_adam") &&
         config.is_null("clip_grad_norm") && world_size == 1 && !config.get_bool("enable_amp");
}

namespace {

constexpr int64_t kSampleChunk = 256;  // samples per task of job A

// Row width: Dim is std::integral_constant<int64_t, 64> for the default embedding_size (loops
// of a known trip count: fully unrolled, no remainder, no runtime alias checks) or int64_t.
using Dim64 = std::integral_constant<int64_t, 64>;

// ⟨u, a − b⟩ with 16 independent partial sums, so the reduction vectorises.
template <typename Dim>
RECBOLE_INLINE float dot_diff(const float* __restrict u, const float* __restrict a,
                              const float* __restrict b, Dim dim) {
  const int64_t d = dim;
  float part[16] = {};
  int64_t k = 0;
  for (; k + 16 <= d; k += 16)
    for (int j = 0; j < 16; ++j) part[j] += u[k + j] * (a[k + j] - b[k + j]);
  float x = 0;
  for (; k < d; ++k) x += u[k] * (a[k] - b[k]);
  for (int j = 0; j < 16; ++j) x += part[j];
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
RECBOLE_INLINE float exp_approx(float x) {
  x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // x − n·ln 2
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
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
  m = big ? m * 0.5f : m;
  e += big ? 1 : 0;
  const float t = (m - 1.f) / (m + 1.f), t2 = t * t;  // ln m = 2 atanh t
  float p = 1.f / 9;
  p = p * t2 + 1.f / 7;
  p = p * t2 + 1.f / 5;
  p = p * t2 + 1.f / 3;
  p = p * t2 + 1.f;
  return 2.f * t * p + static_cast<float>(e) * 0.693147180559945309f;
}

template <typename Dim>
RECBOLE_INLINE double score_chunk_impl(const float* U, const float* I, const int64_t* users,
                                       const int64_t* pos, const int64_t* neg, int64_t lo,
                                       int64_t hi, Dim d, float inv_b, float* dx) {
  // Two passes: the dot products (gathered rows), then the loss and its derivative over the
  // chunk as one vectorisable loop.
  constexpr int64_t kAhead = 8;
  float x[kSampleChunk], loss[kSampleChunk];
  const int64_t n = hi - lo;
  for (int64_t r = lo; r < hi; ++r) {
    if (r + kAhead < hi) {
      prefetch_row(U + users[r + kAhead] * d, d);
      prefetch_row(I + pos[r + kAhead] * d, d);
      prefetch_row(I + neg[r + kAhead] * d, d);
    }
    x[r - lo] = dot_diff(U + users[r] * d, I + pos[r] * d, I + neg[r] * d, d);
  }
  float* out = dx + lo;
  for (int64_t i = 0; i < n; ++i) {
    const float s = 1.f / (1.f + exp_approx(-x[i]));  // σ(x)
    loss[i] = -log_approx(1e-10f + s);
    out[i] = -(s * (1.f - s)) / (1e-10f + s) * inv_b;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += loss[i];
  return sum;
}

// Job A for samples [lo, hi): dx[r] = d loss / d (pos − neg score), and the chunk's loss sum.
RECBOLE_MULTIVERSION
double score_chunk(const float* U, const float* I, const int64_t* users, const int64_t* pos,
                   const int64_t* neg, int64_t lo, int64_t hi, int64_t d, float inv_b,
                   float* dx) {
  if (d == 64) return score_chunk_impl(U, I, users, pos, neg, lo, hi, Dim64{}, inv_b, dx);
  return score_chunk_impl(U, I, users, pos, neg, lo, hi, d, inv_b, dx);
}

template <typename Dim>
RECBOLE_INLINE void axpy(float* __restrict y, const float* __restrict x, float a, Dim dim) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) y[k] += a * x[k];
}

template <typename Dim>
RECBOLE_INLINE void axpy_diff(float* __restrict y, const float* __restrict a,
                              const float* __restrict b, float s, Dim dim) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) y[k] += s * (a[k] - b[k]);
}

struct AdamConsts {
  float b1, b2, eps, wd;
  float step_size;     // adam: lr / bc1; sparse_adam: lr * sqrt(bc2) / bc1
  float inv_sqrt_bc2;  // adam only
};

// torch.optim.Adam on one row (amsgrad off); g may be null (no gradient this step).
template <typename Dim>
RECBOLE_INLINE void adam_row(float* __restrict p, const float* __restrict g, float* __restrict m,
                             float* __restrict v, Dim dim, const AdamConsts& c) {
  const int64_t d = dim;
  for (int64_t k = 0; k < d; ++k) {
    const float grad = (g ? g[k] : 0.f) + c.wd * p[k];
    const float mk = c.b1 * m[k] + (1.f - c.b1) * grad;
    const float vk = c.b2 * v[k] + (1.f - c.b2) * grad * grad;
    m[k] = mk;
    v[k] = vk;
    p[k] -= c.step_size * mk / (std::sqrt(vk) * c.inv_sqrt_bc2 + c.eps);
  }
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

template <typename Dim>
RECBOLE_INLINE void dense_adam_impl(float* P, const float* G, float* M, float* V,
                                    const int64_t* stamp, int64_t step, int64_t lo, int64_t hi,
                                    Dim d, const AdamConsts& c) {
  for (int64_t row = lo; row < hi; ++row) {
    const float* g = stamp[row] == step ? G + row * d : nullptr;
    adam_row(P + row * d, g, M + row * d, V + row * d, d, c);
  }
}

// Job C, dense: Adam over rows [lo, hi); rows not touched at `step` have no gradient.
RECBOLE_MULTIVERSION
void dense_adam_rows(float* P, const float* G, float* M, float* V, const int64_t* stamp,
                     int64_t step, int64_t lo, int64_t hi, int64_t d, AdamConsts c) {
  if (d == 64) return dense_adam_impl(P, G, M, V, stamp, step, lo, hi, Dim64{}, c);
  dense_adam_impl(P, G, M, V, stamp, step, lo, hi, d, c);
}

template <typename Dim>
RECBOLE_INLINE void lazy_adam_impl(float* P, const float* G, float* M, float* V,
                                   const int64_t* rows, int64_t n, Dim d, const AdamConsts& c) {
  // Rows are scattered over tables larger than the cache: prefetch every line of the four rows
  // a few rows ahead, so their misses overlap instead of being waited for in turn.
  constexpr int64_t kAhead = 6;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t off = rows[i] * d;
    if (i + kAhead < n) {
      const int64_t ahead = rows[i + kAhead] * d;
      for (int64_t line = 0; line < d; line += 16) {
        __builtin_prefetch(P + ahead + line, 1);
        __builtin_prefetch(M + ahead + line, 1);
        __builtin_prefetch(V + ahead + line, 1);
        __builtin_prefetch(G + ahead + line);
      }
    }
    sparse_adam_row(P + off, G + off, M + off, V + off, d, c);
  }
}

// Job C, lazy: SparseAdam over the listed rows (each has a gradient at this step).
RECBOLE_MULTIVERSION
void lazy_adam_rows(float* P, const float* G, float* M, float* V, const int64_t* rows,
                    int64_t n, int64_t d, AdamConsts c) {
  if (d == 64) return lazy_adam_impl(P, G, M, V, rows, n, Dim64{}, c);
  lazy_adam_impl(P, G, M, V, rows, n, d, c);
}

template <typename Dim>
RECBOLE_INLINE void accumulate_impl(const float* U, const float* I, float* GU, float* GI,
                                    int64_t* stamp_u, int64_t* stamp_i,
                                    std::vector<int64_t>& touched_u,
                                    std::vector<int64_t>& touched_i, const int64_t* users,
                                    const int64_t* pos, const int64_t* neg, const float* dx,
                                    int64_t b, Dim d, int64_t step, int64_t cls,
                                    int64_t classes) {
  // Rows are owned in blocks of 64 consecutive ids, dealt round-robin to the classes: whole
  // cache lines of the stamp array and of the gradient rows belong to one worker (dealing
  // single rows made neighbouring stamps and rows ping-pong between cores). A mask when the
  // class count is a power of two: an integer division per row would cost as much as the
  // row's arithmetic.
  const bool pow2 = (classes & (classes - 1)) == 0;
  const int64_t mask = classes - 1;
  auto owned = [&](int64_t row) {
    const int64_t block = row >> 6;
    return (pow2 ? (block & mask) : (block % classes)) == cls;
  };
  // First touch of a row at this step: its gradient is assigned rather than added to, so the
  // row need not be zeroed first.
  auto first_touch = [&](int64_t row, int64_t* stamp, std::vector<int64_t>& touched) {
    if (stamp[row] == step) return false;
    stamp[row] = step;
    touched.push_back(row);
    return true;
  };
  const int64_t dd = d;
  constexpr int64_t kAhead = 8;  // prefetch distance for the gradient rows (tables ≫ cache)
  for (int64_t r = 0; r < b; ++r) {
    if (r + kAhead < b) {
      const int64_t ua = users[r + kAhead], pa = pos[r + kAhead], na = neg[r + kAhead];
      if (owned(ua)) {
        __builtin_prefetch(stamp_u + ua, 1);
        prefetch_row(GU + ua * dd, d, true);
        prefetch_row(I + pa * dd, d);
        prefetch_row(I + na * dd, d);
      }
      if (owned(pa) || owned(na)) prefetch_row(U + ua * dd, d);
      if (owned(pa)) {
        __builtin_prefetch(stamp_i + pa, 1);
        prefetch_row(GI + pa * dd, d, true);
      }
      if (owned(na)) {
        __builtin_prefetch(stamp_i + na, 1);
        prefetch_row(GI + na * dd, d, true);
      }
    }
    const int64_t u = users[r], p = pos[r], n = neg[r];
    const float* ur = U + u * dd;
    if (owned(u)) {
      float* g = GU + u * dd;
      if (first_touch(u, stamp_u, touched_u)) std::fill(g, g + dd, 0.f);
      axpy_diff(g, I + p * dd, I + n * dd, dx[r], d);
    }
    if (owned(p)) {
      float* g = GI + p * dd;
      if (first_touch(p, stamp_i, touched_i)) std::fill(g, g + dd, 0.f);
      axpy(g, ur, dx[r], d);
    }
    if (owned(n)) {
      float* g = GI + n * dd;
      if (first_touch(n, stamp_i, touched_i)) std::fill(g, g + dd, 0.f);
      axpy(g, ur, -dx[r], d);
    }
  }
}

// Job B for one ownership class: adds, in sample order, the gradient contributions of every
// sample to the rows the class owns, zeroing a row's gradient at its first touch.
RECBOLE_MULTIVERSION
void accumulate_class(const float* U, const float* I, float* GU, float* GI, int64_t* stamp_u,
                      int64_t* stamp_i, std::vector<int64_t>& touched_u,
                      std::vector<int64_t>& touched_i, const int64_t* users, const int64_t* pos,
                      const int64_t* neg, const float* dx, int64_t b, int64_t d, int64_t step,
                      int64_t cls, int64_t classes) {
  if (d == 64)
    return accumulate_impl(U, I, GU, GI, stamp_u, stamp_i, touched_u, touched_i, users, pos, neg,
                           dx, b, Dim64{}, step, cls, classes);
  accumulate_impl(U, I, GU, GI, stamp_u, stamp_i, touched_u, touched_i, users, pos, neg, dx, b, d,
                  step, cls, classes);
}

}  // namespace

FusedBprTrainer::FusedBprTrainer(models::BPR& model, Update update, double learning_rate,
                                 double weight_decay)
    : model_(model), update_(update), lr_(learning_rate), wd_(weight_decay) {
  dim_ = model.user_embedding().size(1);
  auto init = [&](Table& t, const torch::Tensor& param) {
    t.param = param.data_ptr<float>();
    t.rows = param.size(0);
    const size_t n = static_cast<size_t>(param.numel());
    t.grad.assign(n, 0.f);
    t.m.assign(n, 0.f);
    t.v.assign(n, 0.f);
    t.stamp.assign(static_cast<size_t>(t.rows), -1);
  };
  init(users_, model.user_embedding());
  init(items_, model.item_embedding());
}

double FusedBprTrainer::train_epoch(data::TrainBatcher& batcher) {
  torch::NoGradGuard no_grad;
  // The model's tensors may have been replaced (a checkpoint load): take the pointers now.
  users_.param = model_.user_embedding().data_ptr<float>();
  items_.param = model_.item_embedding().data_ptr<float>();
  const float* U = users_.param;
  const float* I = items_.param;
  const int64_t d = dim_;
  const int classes = ThreadPool::instance().threads();
  users_.touched.resize(static_cast<size_t>(classes));
  items_.touched.resize(static_cast<size_t>(classes));
  double total = 0;
  data::PairBatch pb;
  std::vector<double> chunk_loss;
  while (batcher.next(pb)) {
    const int64_t b = pb.size();
    ++step_;
    // A: score differences and loss.
    dx_.resize(static_cast<size_t>(b));
    const int64_t chunks = (b + kSampleChunk - 1) / kSampleChunk;
    chunk_loss.assign(static_cast<size_t>(chunks), 0.0);
    const float inv_b = 1.f / static_cast<float>(b);
    parallel_for(chunks, [&](int64_t c, int) {
      chunk_loss[c] = score_chunk(U, I, pb.users.data(), pb.pos_items.data(),
                                  pb.neg_items.data(), c * kSampleChunk,
                                  std::min(b, (c + 1) * kSampleChunk), d, inv_b, dx_.data());
    });
    double batch_loss = 0;
    for (double l : chunk_loss) batch_loss += l;  // in chunk order: thread-count independent
    total += batch_loss / static_cast<double>(b);

    // B: gradients, one ownership class per worker (the same rows on the same core every
    // batch, so they stay in its cache).
    ThreadPool::instance().run_per_worker([&](int cls) {
      users_.touched[cls].clear();
      items_.touched[cls].clear();
      accumulate_class(U, I, users_.grad.data(), items_.grad.data(), users_.stamp.data(),
                       items_.stamp.data(), users_.touched[cls], items_.touched[cls],
                       pb.users.data(), pb.pos_items.data(), pb.neg_items.data(), dx_.data(), b,
                       d, step_, cls, classes);
    });

    // C: the optimizer step.
    const double bc1 = 1.0 - std::pow(beta1_, static_cast<double>(step_));
    const double bc2 = 1.0 - std::pow(beta2_, static_cast<double>(step_));
    AdamConsts c;
    c.b1 = static_cast<float>(beta1_);
    c.b2 = static_cast<float>(beta2_);
    c.eps = static_cast<float>(eps_);
    if (update_ == Update::kDenseAdam) {
      c.wd = static_cast<float>(wd_);
      c.step_size = static_cast<float>(lr_ / bc1);
      c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
      // Each worker updates the 64-row blocks it owns in job B (their gradients are in its
      // cache), the same rows every batch.
      ThreadPool::instance().run_per_worker([&](int w) {
        for (Table* tab : {&users_, &items_}) {
          for (int64_t lo = 64 * static_cast<int64_t>(w); lo < tab->rows; lo += 64 * classes)
            dense_adam_rows(tab->param, tab->grad.data(), tab->m.data(), tab->v.data(),
                            tab->stamp.data(), step_, lo, std::min(tab->rows, lo + 64), d, c);
        }
      });
    } else {
      c.wd = 0.f;  // SparseAdam has no weight decay (RecBole ignores it for sparse_adam too)
      c.step_size = static_cast<float>(lr_ * std::sqrt(bc2) / bc1);
      c.inv_sqrt_bc2 = 1.f;
      // Each worker updates the rows it accumulated in job B (still in its cache).
      ThreadPool::instance().run_per_worker([&](int w) {
        for (Table* tab : {&users_, &items_}) {
          const std::vector<int64_t>& rows = tab->touched[w];
          lazy_adam_rows(tab->param, tab->grad.data(), tab->m.data(), tab->v.data(), rows.data(),
                         static_cast<int64_t>(rows.size()), d, c);
        }
      });
    }
  }
  return total;
}

}  // namespace recbole::trainer

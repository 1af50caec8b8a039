#pragma once
// The loops of one BPR training step on the CPU without autograd: the loss
// −mean_r log(1e−10 + σ(x_r)), x_r = ⟨u_r, i⁺_r⟩ − ⟨u_r, i⁻_r⟩, its gradient with respect to
// the user and item embedding rows, and the optimizer step on those rows. The fused BPR trainer
// (models/general/bpr_fused.h) runs them on the ThreadPool and keeps the orchestration: the
// phases, the pool jobs, the buffers, the optimizer's step count. Header: no libtorch.
//
// Conventions of every function here:
//  - U: [n_users, d], I: [n_items, d] float32, row-major, contiguous (row r at U + r·d);
//    d ≤ kMaxDim. d = 64 (the default embedding_size) runs loops unrolled for that width.
//  - A batch of b samples r = 0 .. b − 1: users[r], pos[r], neg[r] (int64 row indices; rows
//    and b below 2³¹, as the gather keeps them as int32).
//  - dx[r] = d loss / d x_r (float32, [b]), with the loss the mean over the b samples.
//  - Each function is compiled for AVX-512, AVX2 and baseline x86-64 (RECBOLE_MULTIVERSION).
// Summation order: every sum is in a fixed order that depends on the data only, never on the
// thread count or on which worker calls — a row's gradient is summed in sample order, the
// chunks of score_chunk are summed by the caller in chunk order — so a step gives bit-identical
// weights for any number of workers (tests/kernels/test_bpr_step.cpp).
#include <cstdint>

#include "kernels/row_optimizers.h"
#include "kernels/simd.h"

namespace recbole::kernels::bpr {

constexpr int64_t kMaxDim = 1024;   // the longest row (embedding_size) these loops take
constexpr int64_t kMaxChunk = 512;  // the most samples one score_chunk call takes
constexpr int64_t kRowBlock = 64;   // rows per block of the row partition (owns_row)

// The row partition of the gradient and update phases: worker w of `workers` owns the rows of
// the kRowBlock-row blocks k with k % workers == w, so that whole cache lines of the slot array
// belong to one worker. A mask when the worker count is a power of two: an integer division per
// row would cost as much as the row's arithmetic.
RECBOLE_INLINE bool owns_row(int64_t row, int worker, int workers) {
  const int64_t block = row >> 6;
  const bool pow2 = (workers & (workers - 1)) == 0;
  return (pow2 ? (block & (workers - 1)) : (block % workers)) == worker;
}
static_assert(kRowBlock == 64, "owns_row shifts by log2(kRowBlock)");

// Samples [lo, hi) of a batch (hi − lo ≤ kMaxChunk): writes dx[lo, hi) with inv_b = 1 / b and
// returns Σ_{r in [lo, hi)} −log(1e−10 + σ(x_r)) (summed in sample order in double). NaN when
// some x_r is not finite (a diverging run), so that the caller's loss check sees it. σ and ln
// are kernels/fast_math.h's approximations, x_r's dot products in 16 partial sums combined
// pairwise. With user_stash and diff_stash (both [b, d], or both null) it also writes each
// sample's u_r and i⁺_r − i⁻_r there, for gather_gradients to read instead of U and I.
double score_chunk(const float* U, const float* I, const int64_t* users, const int64_t* pos,
                   const int64_t* neg, int64_t lo, int64_t hi, int64_t d, float inv_b, float* dx,
                   float* user_stash, float* diff_stash);

// One gradient contribution to a row: sample r (code r) or, for a negative item, code ~r.
struct Contribution {
  int32_t row;
  int32_t code;
};

// One table's gradients for one worker, filled by gather_gradients.
//  slot: [rows of the table] int32, shared by the workers (each writes only its own rows): −1
//        for every row on entry (the caller resets the touched rows to −1 after the update);
//        on return the slot of each touched owned row.
//  touched: [capacity] int32 (capacity b for users, 2b for items): on return touched[k] is the
//        row of slot k, k < n_touched, in order of first touch.
//  grads: [capacity, d] float32: on return slot k's gradient d loss / d row.
struct RowGradients {
  int32_t* slot;
  int32_t* touched;
  float* grads;
  int64_t n_touched;
};

// The gradient of the worker's owned rows (owns_row) of U (into ug) and of I (into ig) for the
// batch of b samples with dx from score_chunk: d loss / d u_r = dx_r · (i⁺_r − i⁻_r),
// d / d i⁺_r = dx_r · u_r, d / d i⁻_r = −dx_r · u_r, each row's terms summed in sample order
// (for a sample whose positive and negative item are the same row: positive first). Read from
// U and I (no worker may write them meanwhile) or, when user_stash is not null, from the
// stashes score_chunk wrote. user_list [b + 1] and item_list [2b + 1]: scratch.
void gather_gradients(int worker, int workers, const float* U, const float* I, const int64_t* users,
                      const int64_t* pos, const int64_t* neg, int64_t b, const float* dx,
                      const float* user_stash, const float* diff_stash, int64_t d, RowGradients& ug,
                      RowGradients& ig, Contribution* user_list, Contribution* item_list);

// The optimizer steps of one table P [rows, d] over a worker's rows. Two forms:
//  - sparse: the n rows rows[k] (each once), row rows[k]'s gradient at grads + k·d ([n, d],
//    a RowGradients' touched and grads); only those rows move.
//  - dense: every row of [lo, hi), its gradient at grads + slot[row]·d when slot[row] ≥ 0 and
//    zero otherwise (a RowGradients' slot and grads); every row moves.
// M, V: [rows, d] Adam moments beside P.

// torch.optim.SGD without weight decay (sgd_row); sparse.
void sgd_sparse_update(float* P, const int32_t* rows, int64_t n, const float* grads, int64_t d,
                       float lr);
// torch.optim.SGD with weight decay wd (sgd_decay_row): every row decays, as torch's SGD does
// with an embedding's dense gradient; dense.
void sgd_dense_update(float* P, const int32_t* slot, int64_t lo, int64_t hi, const float* grads,
                      int64_t d, float lr, float wd);
// torch.optim.SparseAdam (sparse_adam_row); sparse.
void lazy_adam_update(float* P, float* M, float* V, const int32_t* rows, int64_t n,
                      const float* grads, int64_t d, AdamConsts c);
// torch.optim.Adam (adam_row): every row's moments decay, as RecBole's Adam on a dense
// embedding gradient; dense.
void dense_adam_update(float* P, float* M, float* V, const int32_t* slot, int64_t lo, int64_t hi,
                       const float* grads, int64_t d, AdamConsts c);

}  // namespace recbole::kernels::bpr

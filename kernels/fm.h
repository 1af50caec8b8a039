#pragma once
// The FM term of a context model's logit (RecBole's FMLayer with reduce_sum: ½ Σ_k (S_k² −
// Σ_f E_fk²), S = Σ_f E) and its gradient over the field embeddings, written out for
// ContextModel's closed form (models/context/context_model.h: LR, FM, WideDeep, DeepFM), which
// calls them on each part of a batch on its own pool worker. Plain float arrays in host memory,
// on the calling thread; no libtorch.
//
// Layout: E is [b, f, d] float32, row-major and contiguous (row r, field c, dimension k at
// e[(r·f + c)·d + k]); S and sums are [b, d]; z and dz are [b]. f ≥ 1.
#include <cstdint>

namespace recbole::kernels {

// Adds the FM term of each of the b rows of E to z[r], and writes S[r] = Σ_c E[r, c] to
// sum [b, d]. squares: scratch of d floats (Σ_c E[r, c, k]² of one row).
// Summation order, in float: per dimension k, S[r, k] and the squares over the fields c =
// 0..f−1 in order (the inner loops run along k and vectorise); then the row's term Σ_k (S_k² −
// squares_k) over k = 0..d−1 in order; z[r] += 0.5 · term.
void fm_logits(const float* e, int64_t b, int64_t f, int64_t d, float* sum, float* squares,
               float* z);

// The FM term's gradient written over E: e[r, c, k] = dz[r] · (sum[r, k] − e[r, c, k]), plus
// deep[r, c, k] when deep is given ([b, f, d], e.g. the deep part's dloss/dx on the same
// layout; null: none). sum: S as fm_logits wrote it; dz: dloss/dz per row.
void fm_gradient(float* e, const float* sum, const float* dz, const float* deep, int64_t b,
                 int64_t f, int64_t d);

}  // namespace recbole::kernels

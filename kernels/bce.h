#pragma once
// Binary cross-entropy with logits and its gradient, written out for ContextModel's closed form
// (models/context/context_model.h), which calls it on each part of a batch on its own pool
// worker. Plain float arrays in host memory, on the calling thread; no libtorch.
#include <cstdint>

namespace recbole::kernels {

// z, y: [n] float32 logits and labels (labels in [0, 1]). Returns Σ_r of PyTorch's stable form
// max(z, 0) − z·y + log1p(e^−|z|), each row's term in float, summed in double in row order;
// writes dz[r] = (σ(z[r]) − y[r]) / rows, the gradient of that sum divided by `rows` (the whole
// batch's row count, for a part's share of the batch mean). log1p is Goldberg's form through
// logf, within a few ulp of log1pf; σ shares the one exp.
double bce_with_logits(const float* z, const float* y, int64_t n, int64_t rows, float* dz);

}  // namespace recbole::kernels

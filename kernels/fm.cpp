#include "kernels/fm.h"

namespace recbole::kernels {

void fm_logits(const float* e_rows, int64_t b, int64_t f, int64_t d, float* sums,
               float* squares_scratch, float* z) {
  // Per dimension first, then over the dimensions (as layers::fm_interaction): the inner loops
  // run along k and vectorise; a running scalar sum over F·d would be one long dependency chain.
  float* __restrict squares = squares_scratch;
  for (int64_t r = 0; r < b; ++r) {
    const float* __restrict e = e_rows + r * f * d;
    float* __restrict sum = sums + r * d;
    for (int64_t k = 0; k < d; ++k) {
      sum[k] = e[k];
      squares[k] = e[k] * e[k];
    }
    for (int64_t c = 1; c < f; ++c)
      for (int64_t k = 0; k < d; ++k) {
        sum[k] += e[c * d + k];
        squares[k] += e[c * d + k] * e[c * d + k];
      }
    float term = 0.0f;
    for (int64_t k = 0; k < d; ++k) term += sum[k] * sum[k] - squares[k];
    z[r] += 0.5f * term;
  }
}

void fm_gradient(float* e_rows, const float* sums, const float* dz, const float* deep, int64_t b,
                 int64_t f, int64_t d) {
  for (int64_t r = 0; r < b; ++r) {
    float* __restrict e = e_rows + r * f * d;
    const float* __restrict sum = sums + r * d;
    const float g = dz[r];
    for (int64_t c = 0; c < f; ++c)
      for (int64_t k = 0; k < d; ++k) e[c * d + k] = g * (sum[k] - e[c * d + k]);
    if (deep != nullptr) {
      const float* __restrict x = deep + r * f * d;
      for (int64_t i = 0; i < f * d; ++i) e[i] += x[i];
    }
  }
}

}  // namespace recbole::kernels

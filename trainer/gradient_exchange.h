#pragma once
// The gradient exchange of data-parallel training: after backward, every rank replaces each
// parameter's gradient by the mean over ranks.
//
// Dense: one all-reduce of every gradient, flattened into one bucket. Row-sparse: an embedding
// table's gradient is zero outside the rows the batch used, so each rank sends only its non-zero
// rows (row index + values) and every rank sums the gathered rows in rank order. Adding a zero
// row is exact, so the sum equals the dense one; with two ranks it is bit for bit the same, with
// more it can differ in the last bits (the dense all-reduce sums in Gloo's ring order).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "recbole/runtime/dist.h"

namespace recbole::trainer {

enum class GradientExchange {
  kAuto,    // the config key gradient_exchange (DistSettings); its auto: row-sparse for 2-D
            // parameters when that sends under half the bytes of dense, else dense
  kDense,   // always one all-reduce of every gradient
  kSparse,  // always row-sparse for 2-D parameters
};

// params: the model's parameters (those without requires_grad are skipped; an undefined
// gradient counts as zeros and is defined afterwards). CPU tensors. Every rank must call it with
// parameters of the same shapes; all ranks take the same branch (decided from gathered counts).
// A no-op at world size 1.
void average_gradients(const std::vector<torch::Tensor>& params, Dist& dist,
                       GradientExchange mode = GradientExchange::kAuto);

// Totals of this process's exchanges since the last log_gradient_exchange_stats, for the log
// and the benchmarks.
struct GradientExchangeStats {
  int64_t steps = 0;
  int64_t sparse_steps = 0;
  int64_t bytes = 0;              // bytes this rank handed to collectives for gradients
  double seconds = 0;             // wall time in average_gradients (packing, collectives, summing)
  double collective_seconds = 0;  // of which waiting for collectives
};
GradientExchangeStats gradient_exchange_stats();

// Logs the totals per epoch (rank 0's view; nothing at world size 1 or without exchanges) and
// resets them, so that each run in a process reports its own.
void log_gradient_exchange_stats(const Dist& dist, int64_t epochs);

}  // namespace recbole::trainer

#pragma once
// The gradient of a loss that is a sum of parts (a batch's micro-batches), the parts' forward
// and backward passes spread over the CPU pool.
//
// Why: a sequential model's step is hundreds of small libtorch ops and GEMMs ([512, 64] ×
// [64, 192] and the like). On one libtorch intra-op thread (the house rule, see
// recbole/utils/thread_pool.h) a step used one core, and OpenBLAS's second thread spent about a
// third of GRU4Rec's epoch in sched_yield (perf). Here each part runs whole on one pool thread
// with single-threaded BLAS, and libtorch's autograd runs concurrent backward passes of
// separate graphs (each on its calling thread; the parameters are only read).
//
// Results do not depend on the thread count: each part gets its own dropout key
// (layers::DropoutKeyScope), drawn from libtorch's generator in part order before any part
// runs, and the parts' gradients are summed in part order — the order in which successive
// backward() calls would have accumulated them.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace recbole::models::layers {

// loss_of(k), k in [0, parts): part k's share of the loss, a scalar on the parameters' device
// (it may be called on any thread; it must not draw from libtorch's generator other than through
// layers::dropout, nor change the model). On return each parameter in `params` that some part
// reaches holds in grad() Σ_k ∂loss_k/∂p (grad() is overwritten: zero it or not, as before a
// step); the result is Σ_k loss_k, detached. Parameters on another device than the CPU: the
// parts run one after another on the calling thread, backward() accumulating as usual.
// check(loss, k) runs on each part's loss before its backward (a device or finiteness check).
torch::Tensor backward_parts(const std::vector<torch::Tensor>& params, int64_t parts,
                             const std::function<torch::Tensor(int64_t)>& loss_of,
                             const std::function<void(const torch::Tensor&)>& check);

}  // namespace recbole::models::layers

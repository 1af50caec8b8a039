#pragma once
// The gradient of a loss that is a sum of parts (a batch's micro-batches), the parts' forward
// and backward passes spread over the CPU pool.
//
// Why: a sequential model's step is hundreds of small libtorch ops and GEMMs ([512, 64] ×
// [64, 192] and the like). On one libtorch intra-op thread (the house rule, see
// recbole/utils/thread_pool.h) a step used one core, and OpenBLAS's second thread spent about a
// third of GRU4Rec's epoch in sched_yield (perf); a context model's step (DeepFM's) is mostly
// such ops' dispatch and element-wise passes. Here each part runs whole on one pool thread
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
// reaches holds in grad() Σ_k ∂loss_k/∂p, and one that no part reaches a zeroed gradient if it
// had one — as zero_grad() and backward() would leave them, so no zero_grad() is needed before
// (it would be a pass over every gradient); the result is Σ_k loss_k, detached. Parameters on
// another device than the CPU: the gradients are zeroed and the parts run one after another on
// the calling thread, backward() accumulating as usual.
// check(loss, k) runs on each part's loss before its backward (a device or finiteness check).
torch::Tensor backward_parts(const std::vector<torch::Tensor>& params, int64_t parts,
                             const std::function<torch::Tensor(int64_t)>& loss_of,
                             const std::function<void(const torch::Tensor&)>& check);

// The parts' dropout keys as backward_parts draws them: one word of libtorch's generator per
// part, in part order, before any part runs (each part then runs under DropoutKeyScope(key)).
std::vector<uint64_t> draw_part_keys(int64_t parts);

// body(k) for every part k in [0, parts) on the CPU pool, BLAS at one thread meanwhile (each
// part runs its own small products). Grad mode is per thread: a body that needs none sets its
// own torch::NoGradGuard.
void on_pool(int64_t parts, const std::function<void(size_t)>& body);

// table.index_select(0, ids): rows [n, d] of a [rows, d] table for ids [n] int64. Inside a part
// of backward_parts or backward_parts_coupled on the CPU its gradient is sparse (the n rows
// only), and the part sums add those rows into the table's dense gradient: a part then costs
// its rows, not a zeroed gradient of the whole table (index_select's backward; 34,629 × 64
// floats for KGCN's entities, and one per part). Elsewhere it is index_select itself.
torch::Tensor gather_rows(const torch::Tensor& table, const torch::Tensor& ids);

// A part's forward for backward_parts_coupled: its share of the separable loss and the tensors
// the coupling term reads (the same number and kinds in every part).
struct PartForward {
  torch::Tensor loss;
  std::vector<torch::Tensor> coupled;
};

// For a loss Σ_k loss_k + coupling(z) whose last term couples the parts' rows, as RecBole's
// EmbLoss does (the Frobenius norm of every row of the batch, not a sum over rows): the parts'
// forward passes run first, on the pool (forward_of(k): loss_k and z_k); the coupling runs on
// this thread over detached copies z[k][j] (it must read only its argument), and its gradient
// with respect to each z_k enters part k's backward, on the pool. The gradient is the whole
// loss's exactly (up to the summation order, fixed as in backward_parts); the result is
// Σ_k loss_k + coupling, detached. Off the CPU: the whole graph, then one backward().
torch::Tensor backward_parts_coupled(
    const std::vector<torch::Tensor>& params, int64_t parts,
    const std::function<PartForward(int64_t)>& forward_of,
    const std::function<torch::Tensor(const std::vector<std::vector<torch::Tensor>>&)>& coupling,
    const std::function<void(const torch::Tensor&)>& check);

}  // namespace recbole::models::layers

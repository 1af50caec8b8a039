#pragma once
// Adam as torch::optim::Adam defines it, with the update of each CPU float32 parameter fused
// into one pass over its elements (kernels/row_optimizers.h), split over the ThreadPool.
// libtorch's Adam makes about seven passes and four temporaries per parameter per step; for
// the knowledge models' 34,629 × 64 entity table (every row moves through its moments at
// every step, as in PyTorch) that was a third of a batch.
//
// The state is libtorch's (AdamParamState: step, exp_avg, exp_avg_sq), so checkpoints and
// resume files are those of torch::optim::Adam, and either optimizer continues the other's run.
// Parameters the fused pass does not handle (CUDA, other dtypes, sparse gradients, amsgrad) get
// the same update through tensor operations.
#include <torch/torch.h>

namespace recbole {

class FusedAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace recbole

#pragma once
// The optimizer of one parameter group (Model::optimizer_groups), as the config's learner,
// learning_rate and weight_decay ask: adam, adamw, sgd, adagrad, rmsprop, sparse_adam
// (recbole/config/learners.h). adam is FusedAdam (trainer/fused_adam.h) while the fast paths are
// on, libtorch's Adam with fast_path: false (recbole/runtime/fast_path.h); the two share their
// state and checkpoints.
#include <memory>
#include <vector>

#include <torch/torch.h>

namespace recbole {
namespace config {
class Config;
}
}  // namespace recbole

namespace recbole::trainer {

// params: the group's parameters (the optimizer updates them in place). sparse_adam warns and
// is Adam without weight decay (libtorch's C++ API has no SparseAdam).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::Config& config,
                                                        std::vector<torch::Tensor> params);

}  // namespace recbole::trainer

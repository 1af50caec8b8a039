#include "trainer/optimizers.h"

#include "recbole/config/config.h"
#include "recbole/config/learners.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "trainer/fused_adam.h"

namespace recbole::trainer {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::Config& config,
                                                        std::vector<torch::Tensor> params) {
  const double lr = config.get_double("learning_rate");
  const double wd = config.get_double("weight_decay");
  // The config accepts only the names of learner_names().
  switch (*config::parse_learner(config.get_string("learner"))) {
    case config::Learner::kAdam:
      if (!fast_paths_enabled())
        return std::make_unique<torch::optim::Adam>(params,
                                                    torch::optim::AdamOptions(lr).weight_decay(wd));
      return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr).weight_decay(wd));
    case config::Learner::kAdamW:
      return std::make_unique<torch::optim::AdamW>(params,
                                                   torch::optim::AdamWOptions(lr).weight_decay(wd));
    case config::Learner::kSgd:
      return std::make_unique<torch::optim::SGD>(params,
                                                 torch::optim::SGDOptions(lr).weight_decay(wd));
    case config::Learner::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(
          params, torch::optim::AdagradOptions(lr).weight_decay(wd));
    case config::Learner::kRmsprop:
      return std::make_unique<torch::optim::RMSprop>(
          params, torch::optim::RMSpropOptions(lr).weight_decay(wd));
    case config::Learner::kSparseAdam:
      // libtorch's C++ API has no SparseAdam and our embeddings take dense gradients (as
      // RecBole's do, where sparse_adam then fails); Adam without weight decay is the closest
      // honest choice.
      if (wd > 0) log::warning("learner sparse_adam ignores weight_decay, as in RecBole");
      log::warning("learner sparse_adam: dense embeddings; using Adam without weight decay");
      if (!fast_paths_enabled())
        return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
      return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr));
  }
  throw Error("learner: no optimizer for \"" + config.get_string("learner") + "\"");
}

}  // namespace recbole::trainer

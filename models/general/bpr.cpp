#include "models/general/bpr.h"

#include <torch/torch.h>

#include "models/general/bpr_fused.h"
#include "models/layers/init.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/logging.h"

namespace recbole::models {

BPR::BPR(const ModelContext& ctx) : Model("BPR", ctx) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierNormal);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierNormal);
}

torch::Tensor BPR::calculate_loss(const data::Batch& batch) {
  torch::Tensor u = user_embedding_.index_select(0, batch.users);
  torch::Tensor pos = (u * item_embedding_.index_select(0, batch.items)).sum(1);
  torch::Tensor neg = (u * item_embedding_.index_select(0, batch.neg_items)).sum(1);
  return -torch::log(1e-10 + torch::sigmoid(pos - neg)).mean();
}

torch::Tensor BPR::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(user_embedding_.index_select(0, batch.users), item_embedding_.t());
}

torch::Tensor BPR::predict(const data::Batch& batch) {
  return (user_embedding_.index_select(0, batch.users) *
          item_embedding_.index_select(0, batch.items))
      .sum(1);
}

namespace {

// The fused trainer bound to the pair source's batcher.
class FusedEpoch : public FastEpoch {
 public:
  FusedEpoch(BPR& model, FusedBprTrainer::Update update, double lr, double wd,
             data::TrainBatcher& batcher, int threads)
      : trainer_(model, update, lr, wd), batcher_(batcher), threads_(threads), decay_(wd > 0) {}
  void train_epoch(double& loss_sum, const std::function<bool()>& after_batch) override {
    trainer_.train_epoch(batcher_, loss_sum, after_batch);
  }
  void save(torch::serialize::OutputArchive& archive) const override { trainer_.save(archive); }
  void load(torch::serialize::InputArchive& archive) override { trainer_.load(archive); }
  std::string describe() const override {
    using Update = FusedBprTrainer::Update;
    const Update u = trainer_.update();
    const char* step = u == Update::kSgd        ? (decay_ ? "SGD with weight decay on every row"
                                                          : "SGD on the rows each batch uses")
                       : u == Update::kLazyAdam ? "SparseAdam on the rows each batch uses"
                                                : "dense Adam";
    return std::string("fused BPR (sampling, gradient and ") + step + " on " +
           std::to_string(threads_) +
           " threads; fast_bpr: false selects the generic autograd path)";
  }

 private:
  FusedBprTrainer trainer_;
  data::TrainBatcher& batcher_;
  int threads_;
  bool decay_;  // weight decay: the SGD step moves every row
};

}  // namespace

std::unique_ptr<FastEpoch> BPR::fast_epoch(const TrainingEnv& env) {
  data::TrainBatcher* batcher = env.pair_batcher;
  if (!batcher || !fused_bpr_applicable(env.config, *this, env.device, env.world_size))
    return nullptr;
  using Update = FusedBprTrainer::Update;
  const Update update = *FusedBprTrainer::update_for(env.config.get_string("learner"));
  const double wd = env.config.get_double("weight_decay");
  if (update == Update::kLazyAdam && wd > 0)
    log::warning("learner sparse_adam ignores weight_decay, as in RecBole");
  auto fused = std::make_unique<FusedEpoch>(*this, update, env.config.get_double("learning_rate"),
                                            wd, *batcher, env.device.cpu_threads());
  const int64_t rows = n_users() + n_items();
  if (update == Update::kDenseAdam && rows > 20 * env.config.get_int("train_batch_size"))
    log::info("learner adam updates all " + std::to_string(rows) +
              " embedding rows every batch; learner sparse_adam updates only the rows a batch "
              "uses and is much faster on tables this large");
  return fused;
}

RECBOLE_REGISTER_MODEL(BPR) {
  register_model({"BPR",
                  "general",
                  InputType::kPairwise,
                  "Bayesian personalised ranking over user/item embeddings",
                  {keys::embedding_size().decl("Dimension of user and item embeddings")},
                  [](const ModelContext& ctx) { return std::make_shared<BPR>(ctx); }});
}

}  // namespace recbole::models
